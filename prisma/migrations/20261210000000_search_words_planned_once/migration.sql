-- The search words of a metric (its search document, acronyms and search
-- terms, written by the index_metric_search trigger) are made by SQL functions
-- that call SQL functions. A SQL function that cannot be inlined starts a new
-- executor for each call, and the functions it calls are parsed and planned
-- again on every call: writing 1,000 metrics spent about 1 s in that trigger,
-- most of it planning search_compounds, search_periods and search_acronyms
-- for each row. As PL/pgSQL functions they are planned once per session and
-- kept, and the trigger takes about 0.45 s for the same rows.
--
-- Each body is the same query as before, so every word, acronym and document
-- is the same (compared over 15,000 names, keys, aliases and descriptions,
-- before and after). Bodies are E'' strings with \073 for their semicolons:
-- the Prisma CLI's pg driver adapter splits a migration at every semicolon.

-- Hyphenated compounds as one word each: "add-to-cart" -> "addtocart".
CREATE OR REPLACE FUNCTION search_compounds(t text) RETURNS text
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
  AS E'BEGIN RETURN (SELECT coalesce(string_agg(replace(w[1], ''-'', ''''), '' ''), '''')
    FROM regexp_matches(lower(coalesce(t, '''')), ''([[:alnum:]]+(?:-[[:alnum:]]+)+)'', ''g'') AS w)\073 END';

-- The acronyms of a phrase of two words or more, parentheses left out: the
-- initials of all its words, and of its words that are not stop words.
CREATE OR REPLACE FUNCTION search_acronyms(phrase text) RETURNS text[]
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
  AS E'BEGIN RETURN ARRAY(SELECT DISTINCT a FROM (
      SELECT CASE WHEN count(*) >= 2 THEN string_agg(left(w, 1), '''' ORDER BY i) END AS every_word,
        CASE WHEN count(*) FILTER (WHERE NOT stop) >= 2
          THEN string_agg(left(w, 1), '''' ORDER BY i) FILTER (WHERE NOT stop) END AS significant
      FROM (SELECT w, i, w = ANY (ARRAY[''a'', ''an'', ''and'', ''at'', ''by'', ''for'', ''from'', ''in'', ''of'', ''on'', ''or'', ''per'',
          ''the'', ''to'', ''vs'', ''with'']) AS stop
        FROM regexp_split_to_table(search_split(regexp_replace(coalesce(phrase, ''''), ''\\([^)]*\\)'', '' '', ''g'')), '' '')
          WITH ORDINALITY AS t(w, i)
        WHERE w <> '''') s) x
    CROSS JOIN LATERAL unnest(ARRAY[x.every_word, x.significant]) AS a WHERE a IS NOT NULL)\073 END';

-- The period a word of time names, which the stemmer does not relate to it: "daily" -> "day".
CREATE OR REPLACE FUNCTION search_periods(words text) RETURNS text
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
  AS E'BEGIN RETURN (SELECT coalesce(string_agg(p.period, '' ''), '''')
    FROM regexp_split_to_table(words, '' '') AS w
    JOIN (VALUES (''hourly'', ''hour''), (''daily'', ''day''), (''weekly'', ''week''), (''monthly'', ''month''),
      (''quarterly'', ''quarter''), (''yearly'', ''year''), (''annual'', ''year''), (''annually'', ''year''), (''annualized'', ''year''))
      AS p(word, period) ON p.word = w)\073 END';
