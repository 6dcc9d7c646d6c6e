-- Search in tiers (src/metric/rows.ts, rankSearchPage): what a ranking needs
-- of a metric is derived once, when the metric is written, not per query.
--
-- - Words are split on punctuation on the document side as on the query side
--   ("Stickiness (DAU/MAU)": stickiness, dau, mau, not the file path
--   dau/mau), and a hyphenated compound is also one word ("Sign-ups": sign,
--   ups and signups).
-- - Name words (weight A of `search_vector`): the name, the key's parts, the
--   aliases, and the acronyms of the name and of every alias of two words or
--   more: the initials of all its words and of its significant words, outside
--   parentheses ("Mean Time to Resolution": mttr and mtr, "Daily Active
--   Users (EU)": dau). A query whose words are all name words matches a
--   name: `search_vector @@ <query restricted to weight A>` says so.
-- - `forms`: the name, key and aliases with everything but letters and digits
--   taken out, and `acronyms`: the acronyms. A query equal to one of them (its
--   letters and digits) is an exact match.
-- - `canon`: the lifecycle's place in the canonical order: 0 released or
--   approved, 1 validated or candidate, 2 draft, 3 deprecated.
-- - `rank_norm`: what a full-text rank is divided by, so that a long
--   document does not win by repeating a word: the log2 of its number of
--   words plus one, as `ts_rank`'s normalization flag 1 does with positions,
--   computed here once instead of on every match of every search.
-- - `parent_id`: the metric that supersedes this one, else the one it is a
--   variant of: search ranks a metric right after its parent when both match
--   in the same tier. `is_parent`: some metric has this one as its parent
--   (search looks up the sort keys of these only). Kept by the relationship
--   triggers below, which also bump `metrics_version` (kept search pages are
--   keyed by it).
--
-- `search_term` also gets the alias words, and the acronyms as words that are
-- known (a query word that is one is not corrected) but never offered as a
-- correction (`correctable`): the trigram index that corrections search holds
-- the correctable words only, so acronyms do not make corrections slower.
--
-- Function bodies of triggers are E'' strings with \073 for their semicolons:
-- the Prisma CLI's pg driver adapter splits a migration at every semicolon.

-- Lowercase words separated by single spaces: every run of anything but letters and digits is a space.
CREATE FUNCTION search_split(t text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT btrim(regexp_replace(lower(coalesce(t, '')), '[^[:alnum:]]+', ' ', 'g')) $$;

-- Hyphenated compounds as one word each: "add-to-cart" -> "addtocart".
CREATE FUNCTION search_compounds(t text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT coalesce(string_agg(replace(w[1], '-', ''), ' '), '')
    FROM regexp_matches(lower(coalesce(t, '')), '([[:alnum:]]+(?:-[[:alnum:]]+)+)', 'g') AS w $$;

-- Letters and digits only: "Net Revenue" and "net_revenue" -> "netrevenue".
CREATE FUNCTION search_compact(t text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT regexp_replace(lower(coalesce(t, '')), '[^[:alnum:]]+', '', 'g') $$;

-- The acronyms of a phrase of two words or more, parentheses left out: the
-- initials of all its words, and of its words that are not stop words.
CREATE FUNCTION search_acronyms(phrase text) RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT ARRAY(SELECT DISTINCT a FROM (
      SELECT CASE WHEN count(*) >= 2 THEN string_agg(left(w, 1), '' ORDER BY i) END AS every_word,
        CASE WHEN count(*) FILTER (WHERE NOT stop) >= 2
          THEN string_agg(left(w, 1), '' ORDER BY i) FILTER (WHERE NOT stop) END AS significant
      FROM (SELECT w, i, w = ANY (ARRAY['a', 'an', 'and', 'at', 'by', 'for', 'from', 'in', 'of', 'on', 'or', 'per',
          'the', 'to', 'vs', 'with']) AS stop
        FROM regexp_split_to_table(search_split(regexp_replace(coalesce(phrase, ''), '\([^)]*\)', ' ', 'g')), ' ')
          WITH ORDINALITY AS t(w, i)
        WHERE w <> '') s) x
    CROSS JOIN LATERAL unnest(ARRAY[x.every_word, x.significant]) AS a WHERE a IS NOT NULL) $$;

-- The period a word of time names, which the stemmer does not relate to it: "daily" -> "day".
CREATE FUNCTION search_periods(words text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT coalesce(string_agg(p.period, ' '), '')
    FROM regexp_split_to_table(words, ' ') AS w
    JOIN (VALUES ('hourly', 'hour'), ('daily', 'day'), ('weekly', 'week'), ('monthly', 'month'),
      ('quarterly', 'quarter'), ('yearly', 'year'), ('annual', 'year'), ('annually', 'year'), ('annualized', 'year'))
      AS p(word, period) ON p.word = w $$;

-- Name words: the name, the key's parts and the aliases, split, with their hyphenated compounds and the
-- periods their words of time name.
CREATE FUNCTION metric_name_words(name text, key text, aliases text[]) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT concat_ws(' ', n.words, search_periods(n.words))
    FROM (SELECT concat_ws(' ', search_split(name), search_compounds(name), search_split(key),
      search_split(array_to_string(aliases, ' ')), search_compounds(array_to_string(aliases, ' '))) AS words) n $$;

CREATE FUNCTION metric_acronyms(name text, aliases text[]) RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT ARRAY(SELECT DISTINCT a FROM unnest(search_acronyms(name)
    || coalesce((SELECT array_agg(x) FROM unnest(aliases) AS y, unnest(search_acronyms(y)) AS x), ARRAY[]::text[])) AS a) $$;

CREATE FUNCTION metric_forms(name text, key text, aliases text[]) RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT ARRAY(SELECT DISTINCT f FROM unnest(ARRAY[search_compact(name), search_compact(key)]
    || coalesce((SELECT array_agg(search_compact(a)) FROM unnest(aliases) AS a), ARRAY[]::text[])) AS f WHERE f <> '') $$;

CREATE FUNCTION metric_canon(status text) RETURNS smallint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT (CASE status WHEN 'RELEASED' THEN 0 WHEN 'APPROVED' THEN 0 WHEN 'VALIDATED' THEN 1
    WHEN 'CANDIDATE' THEN 1 WHEN 'DRAFT' THEN 2 ELSE 3 END)::smallint $$;

CREATE FUNCTION metric_search_document(name_words text, acronyms text[], concept text, tags text[], description text)
  RETURNS tsvector
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT
    setweight(to_tsvector('english'::regconfig, name_words || ' ' || array_to_string(acronyms, ' ')), 'A') ||
    setweight(to_tsvector('english'::regconfig, search_split(concept) || ' ' || search_split(array_to_string(tags, ' '))), 'B') ||
    setweight(to_tsvector('english'::regconfig, search_split(description) || ' ' || search_compounds(description)), 'C') $$;

-- The metric that supersedes this one, else the one it is a variant of (the first by id when several).
CREATE FUNCTION search_rank_norm(document tsvector) RETURNS real
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT greatest(1, log(2.0, length(document) + 1.0))::real $$;

CREATE FUNCTION metric_parent(metric uuid) RETURNS uuid
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT coalesce(
    (SELECT r."metric_id" FROM "metric_relationship" r
     WHERE r."target_metric_id" = metric AND r."kind" = 'supersedes' AND r."metric_id" <> metric ORDER BY 1 LIMIT 1),
    (SELECT r."target_metric_id" FROM "metric_relationship" r
     WHERE r."metric_id" = metric AND r."kind" = 'variant_of' AND r."target_metric_id" <> metric ORDER BY 1 LIMIT 1)) $$;

-- The query side of a search that corrects (src/metric/rows.ts): one call per search, whose
-- statements PL/pgSQL plans once per connection. A word that is none of the organization's words and
-- has three letters or more is corrected to the correctable words it is part of ("reven": revenue),
-- then to the most similar by trigrams (similarity at least 0.25: "marign": margin), at most 20.
--
-- - `corrected`: every word, the corrected ones as the OR of their corrections (null when no word
--   was corrected), and `corrected_name`: the same restricted to name words (weight A).
-- - `parts`, `part_names`: for partial coverage, each of the `significant` words on its own,
--   anywhere and among name words: as written when it is a word of the organization's metrics
--   (their text included), else its corrections (null unless two or more have lexemes),
--   `part_fixed`: which are corrections, `any_part`: their OR, and `most_parts`: every part but
--   one, for each (null unless three or more).
CREATE FUNCTION search_query(org uuid, words text[], significant text[])
  RETURNS TABLE (corrected tsquery, corrected_name tsquery, parts tsquery[], part_names tsquery[], part_fixed boolean[],
    any_part tsquery, most_parts tsquery)
  LANGUAGE plpgsql STABLE ROWS 1 AS E'
BEGIN
  PERFORM set_config(''pg_trgm.similarity_threshold'', ''0.25'', true)\073
  RETURN QUERY
  WITH word AS MATERIALIZED (
    SELECT w.ord, w.word, w.word = ANY (significant) AS significant, k.known,
      CASE WHEN NOT k.known AND length(w.word) > 2 THEN (
        SELECT string_agg(c.term, '' '' ORDER BY c.n) FROM (
          SELECT t."term", row_number() OVER (ORDER BY t."term" LIKE ''%'' || w.word || ''%'' DESC,
            similarity(t."term", w.word) DESC, t."term") AS n
          FROM "search_term" t
          WHERE t."org_id" = org AND t."correctable" AND (t."term" % w.word OR t."term" LIKE ''%'' || w.word || ''%'')
          ORDER BY n LIMIT 20) c) END AS corrections
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
     FROM part p WHERE numnode(p.q) > 0 HAVING count(*) > 2)\073
END';

ALTER TABLE "metric_search"
  ADD COLUMN "forms" TEXT[] NOT NULL DEFAULT ARRAY[]::TEXT[],
  ADD COLUMN "acronyms" TEXT[] NOT NULL DEFAULT ARRAY[]::TEXT[],
  ADD COLUMN "canon" SMALLINT NOT NULL DEFAULT 3,
  ADD COLUMN "rank_norm" REAL NOT NULL DEFAULT 1,
  ADD COLUMN "parent_id" UUID,
  ADD COLUMN "is_parent" BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX "metric_search_parent_idx" ON "metric_search" ("parent_id") WHERE "parent_id" IS NOT NULL;

ALTER TABLE "search_term" ADD COLUMN "correctable" BOOLEAN NOT NULL DEFAULT true;
DROP INDEX "search_term_trgm_idx";
CREATE INDEX "search_term_trgm_idx" ON "search_term" USING gin ("term" gin_trgm_ops) WHERE "correctable";

-- One statement a write: each metric's words and acronyms are derived once, for its search row and its
-- words. A new metric has no relationships yet (they refer to it) and a changed one keeps them:
-- `parent_id` is the relationship triggers' business.
CREATE OR REPLACE FUNCTION "index_metric_search"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  WITH word AS MATERIALIZED (
    SELECT n."id", n."org_id", n."name", n."lifecycle_status", n."policy_tier", n."scope", n."metric_type",
      n."concept_name", n."tags",
      metric_name_words(n."name", n."key", n."aliases") AS name_words,
      metric_acronyms(n."name", n."aliases") AS acronyms,
      metric_forms(n."name", n."key", n."aliases") AS forms,
      n."description"
    FROM "new_rows" n),
  doc AS MATERIALIZED (
    SELECT w.*, metric_search_document(w.name_words, w.acronyms, w."concept_name", w."tags", w."description") AS document
    FROM word w),
  indexed AS (
    INSERT INTO "metric_search" ("id", "org_id", "name", "lifecycle_status", "policy_tier", "scope", "metric_type",
      "search_vector", "forms", "acronyms", "canon", "rank_norm")
    SELECT d."id", d."org_id", d."name", d."lifecycle_status", d."policy_tier", d."scope", d."metric_type",
      d.document, d.forms, d.acronyms, metric_canon(d."lifecycle_status"::text), search_rank_norm(d.document)
    FROM doc d
    ON CONFLICT ("id") DO UPDATE SET "org_id" = EXCLUDED."org_id", "name" = EXCLUDED."name",
      "lifecycle_status" = EXCLUDED."lifecycle_status", "policy_tier" = EXCLUDED."policy_tier",
      "scope" = EXCLUDED."scope", "metric_type" = EXCLUDED."metric_type", "search_vector" = EXCLUDED."search_vector",
      "forms" = EXCLUDED."forms", "acronyms" = EXCLUDED."acronyms", "canon" = EXCLUDED."canon",
      "rank_norm" = EXCLUDED."rank_norm")
  INSERT INTO "search_term" ("org_id", "term", "correctable")
  SELECT w.org_id, w.term, bool_or(w.correctable)
  FROM (
    SELECT d."org_id", t.term, true AS correctable
    FROM doc d CROSS JOIN LATERAL search_terms(
      d.name_words || '' '' || search_split(d."concept_name") || '' '' || search_split(array_to_string(d."tags", '' ''))) AS t(term)
    UNION ALL
    SELECT d."org_id", a, false FROM doc d CROSS JOIN LATERAL unnest(d.acronyms) AS a WHERE length(a) > 1) w
  GROUP BY w.org_id, w.term
  ON CONFLICT ("org_id", "term") DO UPDATE SET "correctable" = true
    WHERE EXCLUDED."correctable" AND NOT "search_term"."correctable"\073
  RETURN NULL\073
END';

-- Relationships: the parents of the metrics at either end, whether they are parents, and the
-- organization's metrics_version when either changed (the ranking depends on them).
CREATE FUNCTION "index_metric_parent"() RETURNS trigger LANGUAGE plpgsql AS E'
DECLARE
  ends uuid[]\073
  changed bigint\073
  total bigint := 0\073
BEGIN
  IF TG_OP = ''INSERT'' THEN
    ends := ARRAY(SELECT "metric_id" FROM "new_rows" UNION SELECT "target_metric_id" FROM "new_rows")\073
  ELSIF TG_OP = ''DELETE'' THEN
    ends := ARRAY(SELECT "metric_id" FROM "old_rows" UNION SELECT "target_metric_id" FROM "old_rows")\073
  ELSE
    ends := ARRAY(SELECT "metric_id" FROM "new_rows" UNION SELECT "target_metric_id" FROM "new_rows"
      UNION SELECT "metric_id" FROM "old_rows" UNION SELECT "target_metric_id" FROM "old_rows")\073
  END IF\073
  -- The parents these metrics had: a metric can stop being one without being an end.
  ends := ends || ARRAY(SELECT "parent_id" FROM "metric_search" WHERE "id" = ANY (ends) AND "parent_id" IS NOT NULL)\073
  UPDATE "metric_search" s SET "parent_id" = metric_parent(s."id")
  WHERE s."id" = ANY (ends) AND s."parent_id" IS DISTINCT FROM metric_parent(s."id")\073
  GET DIAGNOSTICS changed = ROW_COUNT\073
  total := total + changed\073
  UPDATE "metric_search" s SET "is_parent" = NOT s."is_parent"
  WHERE s."id" = ANY (ends) AND s."is_parent" <> EXISTS (SELECT 1 FROM "metric_search" c WHERE c."parent_id" = s."id")\073
  GET DIAGNOSTICS changed = ROW_COUNT\073
  total := total + changed\073
  IF total > 0 THEN
    UPDATE "organization" SET "metrics_version" = "metrics_version" + 1
    WHERE "id" IN (SELECT m."org_id" FROM "metric" m WHERE m."id" = ANY (ends))\073
  END IF\073
  RETURN NULL\073
END';

CREATE TRIGGER "metric_search_relationship_inserted" AFTER INSERT ON "metric_relationship"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "index_metric_parent"();
CREATE TRIGGER "metric_search_relationship_updated" AFTER UPDATE ON "metric_relationship"
  REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "index_metric_parent"();
CREATE TRIGGER "metric_search_relationship_deleted" AFTER DELETE ON "metric_relationship"
  REFERENCING OLD TABLE AS "old_rows" FOR EACH STATEMENT EXECUTE FUNCTION "index_metric_parent"();

UPDATE "metric_search" s SET
  "search_vector" = d.document, "forms" = d.forms, "acronyms" = d.acronyms, "canon" = d.canon,
  "rank_norm" = search_rank_norm(d.document), "parent_id" = d.parent
FROM (
  SELECT m."id", metric_search_document(metric_name_words(m."name", m."key", m."aliases"),
      metric_acronyms(m."name", m."aliases"), m."concept_name", m."tags", m."description") AS document,
    metric_forms(m."name", m."key", m."aliases") AS forms, metric_acronyms(m."name", m."aliases") AS acronyms,
    metric_canon(m."lifecycle_status"::text) AS canon, metric_parent(m."id") AS parent
  FROM "metric" m) d
WHERE d."id" = s."id";

UPDATE "metric_search" s SET "is_parent" = true
WHERE EXISTS (SELECT 1 FROM "metric_search" c WHERE c."parent_id" = s."id");

INSERT INTO "search_term" ("org_id", "term", "correctable")
SELECT w.org_id, w.term, bool_or(w.correctable)
FROM (
  SELECT m."org_id", t.term, true AS correctable
  FROM "metric" m CROSS JOIN LATERAL search_terms(metric_name_words(m."name", m."key", m."aliases") || ' '
    || search_split(m."concept_name") || ' ' || search_split(array_to_string(m."tags", ' '))) AS t(term)
  UNION ALL
  SELECT m."org_id", a, false FROM "metric" m CROSS JOIN LATERAL unnest(metric_acronyms(m."name", m."aliases")) AS a
  WHERE length(a) > 1) w
GROUP BY w.org_id, w.term
ON CONFLICT ("org_id", "term") DO UPDATE SET "correctable" = true
  WHERE EXCLUDED."correctable" AND NOT "search_term"."correctable";
