-- Search that says what it did (src/metric/search-rank.ts, search-page.ts): the query side of a
-- search that corrects, as 20261125000000_search_tiers made it, with two changes.
--
-- - A word with two adjacent letters swapped ("chrun") is corrected to the organization's words it
--   swaps back to ("churn"), and to those only. Trigram similarity misses most transpositions
--   ("chrun" and "churn" share 2 of their 10 trigrams, similarity 0.2), and a swap that gives a word
--   of the organization is a likelier reading than any word that is merely similar. Looked up by the
--   primary key (org_id, term): at most length - 1 candidates.
-- - `fixes`: each corrected word and the correction it most likely meant (the first of its
--   corrections: a swap, else a word it is part of, else the most similar), as a flat array
--   {from, to, from, to, ...}, so that a response can say which words were corrected.
--
-- The result type changes, which CREATE OR REPLACE cannot do: the function is dropped and created
-- again in this migration's transaction. The new column is last, so a statement that reads the
-- columns it knew (`s.*`) still works. The body is an E'' string with \073 for its semicolons: the
-- Prisma CLI's pg driver adapter splits a migration at every semicolon.
DROP FUNCTION search_query(uuid, text[], text[]);

CREATE FUNCTION search_query(org uuid, words text[], significant text[])
  RETURNS TABLE (corrected tsquery, corrected_name tsquery, parts tsquery[], part_names tsquery[], part_fixed boolean[],
    any_part tsquery, most_parts tsquery, fixes text[])
  LANGUAGE plpgsql STABLE ROWS 1 AS E'
BEGIN
  PERFORM set_config(''pg_trgm.similarity_threshold'', ''0.25'', true)\073
  RETURN QUERY
  WITH word AS MATERIALIZED (
    SELECT w.ord, w.word, w.word = ANY (significant) AS significant, k.known,
      CASE WHEN NOT k.known AND length(w.word) > 2 THEN coalesce(
        (SELECT string_agg(t."term", '' '' ORDER BY t."term")
         FROM "search_term" t
         WHERE t."org_id" = org AND t."correctable" AND t."term" = ANY (ARRAY(
           SELECT left(w.word, i - 1) || substr(w.word, i + 1, 1) || substr(w.word, i, 1) || substr(w.word, i + 2)
           FROM generate_series(1, length(w.word) - 1) AS i
           WHERE substr(w.word, i, 1) <> substr(w.word, i + 1, 1)))),
        (SELECT string_agg(c.term, '' '' ORDER BY c.n) FROM (
          SELECT t."term", row_number() OVER (ORDER BY t."term" LIKE ''%'' || w.word || ''%'' DESC,
            similarity(t."term", w.word) DESC, t."term") AS n
          FROM "search_term" t
          WHERE t."org_id" = org AND t."correctable" AND (t."term" % w.word OR t."term" LIKE ''%'' || w.word || ''%'')
          ORDER BY n LIMIT 20) c)) END AS corrections
    FROM unnest(words) WITH ORDINALITY AS w(word, ord)
    CROSS JOIN LATERAL (SELECT EXISTS (
      SELECT 1 FROM "search_term" t WHERE t."org_id" = org AND t."term" = w.word) AS known) k),
  alternative AS (
    SELECT w.ord, w.word, w.significant, w.corrections IS NOT NULL AS corrected,
      string_to_array(coalesce(w.corrections, w.word), '' '') AS forms,
      CASE WHEN w.corrections IS NULL OR NOT w.significant OR EXISTS (
          SELECT 1 FROM "metric_search" m WHERE m."org_id" = org AND m."search_vector" @@ to_tsquery(''english'', w.word))
        THEN NULL ELSE string_to_array(w.corrections, '' '') END AS part_corrections
    FROM word w),
  part AS (
    SELECT a.ord, a.part_corrections IS NOT NULL AS fixed,
      to_tsquery(''english'', array_to_string(coalesce(a.part_corrections, ARRAY[a.word]), '' | '')) AS q,
      to_tsquery(''english'', array_to_string(coalesce(a.part_corrections, ARRAY[a.word]), '':A | '') || '':A'') AS name_q
    FROM alternative a WHERE a.significant)
  SELECT
    (SELECT to_tsquery(''english'', string_agg(''('' || array_to_string(a.forms, '' | '') || '')'', '' & '' ORDER BY a.ord))
     FROM alternative a HAVING bool_or(a.corrected)),
    (SELECT to_tsquery(''english'', string_agg(''('' || array_to_string(a.forms, '':A | '') || '':A)'', '' & '' ORDER BY a.ord))
     FROM alternative a HAVING bool_or(a.corrected)),
    (SELECT array_agg(p.q ORDER BY p.ord) FROM part p WHERE numnode(p.q) > 0 HAVING count(*) > 1),
    (SELECT array_agg(p.name_q ORDER BY p.ord) FROM part p WHERE numnode(p.q) > 0 HAVING count(*) > 1),
    (SELECT array_agg(p.fixed ORDER BY p.ord) FROM part p WHERE numnode(p.q) > 0 HAVING count(*) > 1),
    (SELECT string_agg(''('' || p.q::text || '')'', '' | '')::tsquery FROM part p WHERE numnode(p.q) > 0 HAVING count(*) > 1),
    (SELECT string_agg(''('' || (
        SELECT string_agg(''('' || o.q::text || '')'', '' & '') FROM part o WHERE numnode(o.q) > 0 AND o.ord <> p.ord) || '')'', '' | '')::tsquery
     FROM part p WHERE numnode(p.q) > 0 HAVING count(*) > 2),
    (SELECT array_agg(x.v ORDER BY a.ord, x.k)
     FROM alternative a CROSS JOIN LATERAL unnest(ARRAY[a.word, a.forms[1]]) WITH ORDINALITY AS x(v, k)
     WHERE a.corrected)\073
END';
