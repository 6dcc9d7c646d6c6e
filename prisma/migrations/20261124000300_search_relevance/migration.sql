-- Aliases: other names people use for a metric ("NRR", "net dollar retention").
ALTER TABLE "metric" ADD COLUMN "aliases" TEXT[] DEFAULT ARRAY[]::TEXT[];

-- Search documents for ranking in tiers (src/metric/rows.ts, rankSearchPage).
--
-- Words are split on punctuation on the document side as on the query side
-- ("Stickiness (DAU/MAU)" is the words stickiness, dau and mau, not the file
-- path dau/mau), and a hyphenated compound is also one word ("Sign-ups":
-- sign, ups and signups). A name of two words or more also gives its
-- acronyms as words: the initials of every word and of its significant words
-- (outside parentheses: "Mean Time to Resolution" mttr and mtr, "Daily Active
-- Users (EU)" dau). Name, aliases, key parts and acronyms are the metric's
-- name words (`name_vector`), and weigh most in `search_vector`.
--
-- `forms`: the name, key and aliases with everything but letters and digits
-- taken out, and the acronyms: a query equal to one of them is an exact match.
-- `parent_id`: the metric that supersedes this one, else the one it is a
-- variant of: search ranks a metric right after its parent when both match.
-- Relationship changes keep it (and bump `metrics_version`, which keys kept
-- search pages).
CREATE FUNCTION search_split(t text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT regexp_replace(lower(coalesce(t, '')), '[^[:alnum:]]+', ' ', 'g') $$;

CREATE FUNCTION search_compounds(t text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT coalesce(string_agg(replace(w[1], '-', ''), ' '), '')
    FROM regexp_matches(lower(coalesce(t, '')), '([[:alnum:]]+(?:-[[:alnum:]]+)+)', 'g') AS w $$;

CREATE FUNCTION search_compact(t text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT regexp_replace(lower(t), '[^[:alnum:]]+', '', 'g') $$;

CREATE FUNCTION name_acronyms(name text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT concat_ws(' ',
      CASE WHEN count(*) >= 2 THEN string_agg(left(w, 1), '' ORDER BY i) END,
      CASE WHEN count(*) FILTER (WHERE w NOT IN ('a', 'an', 'and', 'at', 'by', 'for', 'from', 'in', 'of', 'on', 'or', 'per', 'the', 'to', 'vs', 'with')) >= 2
        THEN string_agg(left(w, 1), '' ORDER BY i) FILTER (WHERE w NOT IN ('a', 'an', 'and', 'at', 'by', 'for', 'from', 'in', 'of', 'on', 'or', 'per', 'the', 'to', 'vs', 'with')) END)
    FROM regexp_split_to_table(trim(search_split(regexp_replace(name, '\([^)]*\)', ' ', 'g'))), '\s+') WITH ORDINALITY AS t(w, i)
    WHERE w <> '' $$;

CREATE FUNCTION metric_name_text(name text, key text, aliases text[]) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT concat_ws(' ', search_split(name), search_compounds(name), search_split(key),
    search_split(array_to_string(aliases, ' ')), search_compounds(array_to_string(aliases, ' ')), name_acronyms(name)) $$;

CREATE FUNCTION metric_search_document(name text, key text, aliases text[], concept text, tags text[], description text) RETURNS tsvector
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT
    setweight(to_tsvector('english'::regconfig, metric_name_text(name, key, aliases)), 'A') ||
    setweight(to_tsvector('english'::regconfig, search_split(concept) || ' ' || search_split(array_to_string(tags, ' '))), 'B') ||
    setweight(to_tsvector('english'::regconfig, search_split(description) || ' ' || search_compounds(description)), 'C') $$;

CREATE FUNCTION metric_forms(name text, key text, aliases text[]) RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT ARRAY[search_compact(name), search_compact(key)]
    || coalesce((SELECT array_agg(search_compact(a)) FROM unnest(aliases) AS a), ARRAY[]::text[])
    || coalesce(string_to_array(nullif(name_acronyms(name), ''), ' '), ARRAY[]::text[]) $$;

CREATE FUNCTION metric_parent(metric uuid) RETURNS uuid
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT coalesce(
    (SELECT r."metric_id" FROM "metric_relationship" r WHERE r."target_metric_id" = metric AND r."kind" = 'supersedes' ORDER BY 1 LIMIT 1),
    (SELECT r."target_metric_id" FROM "metric_relationship" r WHERE r."metric_id" = metric AND r."kind" = 'variant_of' ORDER BY 1 LIMIT 1)) $$;

ALTER TABLE "metric_search"
  ADD COLUMN "name_vector" tsvector NOT NULL DEFAULT ''::tsvector,
  ADD COLUMN "forms" TEXT[] NOT NULL DEFAULT ARRAY[]::TEXT[],
  ADD COLUMN "parent_id" UUID;

-- One statement a write: each metric's name words and acronyms are derived
-- once, for its search row and its words. A new metric has no relationships
-- yet (they refer to it), and a changed one keeps them: `parent_id` is left to
-- the relationship triggers.
CREATE OR REPLACE FUNCTION "index_metric_search"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  WITH doc AS MATERIALIZED (
    SELECT n."id", n."org_id", n."name", n."key", n."aliases", n."lifecycle_status", n."policy_tier", n."scope",
      n."metric_type", n."concept_name", n."tags", n."description", a.acronyms,
      concat_ws('' '', search_split(n."name"), search_compounds(n."name"), search_split(n."key"),
        search_split(array_to_string(n."aliases", '' '')), search_compounds(array_to_string(n."aliases", '' '')),
        a.acronyms) AS name_text
    FROM "new_rows" n CROSS JOIN LATERAL (SELECT name_acronyms(n."name") AS acronyms) a),
  indexed AS (
    INSERT INTO "metric_search" ("id", "org_id", "name", "lifecycle_status", "policy_tier", "scope", "metric_type",
      "search_vector", "name_vector", "forms")
    SELECT d."id", d."org_id", d."name", d."lifecycle_status", d."policy_tier", d."scope", d."metric_type",
      setweight(to_tsvector(''english''::regconfig, d.name_text), ''A'') ||
      setweight(to_tsvector(''english''::regconfig, search_split(d."concept_name") || '' '' || search_split(array_to_string(d."tags", '' ''))), ''B'') ||
      setweight(to_tsvector(''english''::regconfig, search_split(d."description") || '' '' || search_compounds(d."description")), ''C''),
      to_tsvector(''english''::regconfig, d.name_text),
      ARRAY[search_compact(d."name"), search_compact(d."key")]
        || coalesce((SELECT array_agg(search_compact(x)) FROM unnest(d."aliases") AS x), ARRAY[]::text[])
        || coalesce(string_to_array(nullif(d.acronyms, ''''), '' ''), ARRAY[]::text[])
    FROM doc d
    ON CONFLICT ("id") DO UPDATE SET "org_id" = EXCLUDED."org_id", "name" = EXCLUDED."name",
      "lifecycle_status" = EXCLUDED."lifecycle_status", "policy_tier" = EXCLUDED."policy_tier",
      "scope" = EXCLUDED."scope", "metric_type" = EXCLUDED."metric_type", "search_vector" = EXCLUDED."search_vector",
      "name_vector" = EXCLUDED."name_vector", "forms" = EXCLUDED."forms")
  INSERT INTO "search_term" ("org_id", "term")
  SELECT DISTINCT d."org_id", t.term
  FROM doc d CROSS JOIN LATERAL search_terms(
    d.name_text || '' '' || search_split(d."concept_name") || '' '' || search_split(array_to_string(d."tags", '' ''))) AS t(term)
  ON CONFLICT DO NOTHING\073
  RETURN NULL\073
END';

CREATE FUNCTION "index_metric_parent"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  IF TG_OP <> ''DELETE'' THEN
    UPDATE "metric_search" s SET "parent_id" = metric_parent(s."id")
    WHERE s."id" IN (SELECT CASE WHEN r."kind" = ''supersedes'' THEN r."target_metric_id" ELSE r."metric_id" END
      FROM "new_rows" r WHERE r."kind" IN (''supersedes'', ''variant_of''))\073
    UPDATE "organization" SET "metrics_version" = "metrics_version" + 1
    WHERE "id" IN (SELECT m."org_id" FROM "metric" m JOIN "new_rows" r ON r."metric_id" = m."id")\073
  END IF\073
  IF TG_OP <> ''INSERT'' THEN
    UPDATE "metric_search" s SET "parent_id" = metric_parent(s."id")
    WHERE s."id" IN (SELECT CASE WHEN r."kind" = ''supersedes'' THEN r."target_metric_id" ELSE r."metric_id" END
      FROM "old_rows" r WHERE r."kind" IN (''supersedes'', ''variant_of''))\073
    UPDATE "organization" SET "metrics_version" = "metrics_version" + 1
    WHERE "id" IN (SELECT m."org_id" FROM "metric" m JOIN "old_rows" r ON r."metric_id" = m."id")\073
  END IF\073
  RETURN NULL\073
END';

CREATE TRIGGER "metric_relationship_inserted" AFTER INSERT ON "metric_relationship"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "index_metric_parent"();
CREATE TRIGGER "metric_relationship_updated" AFTER UPDATE ON "metric_relationship"
  REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "index_metric_parent"();
CREATE TRIGGER "metric_relationship_deleted" AFTER DELETE ON "metric_relationship"
  REFERENCING OLD TABLE AS "old_rows" FOR EACH STATEMENT EXECUTE FUNCTION "index_metric_parent"();

UPDATE "metric_search" s SET
  "search_vector" = metric_search_document(m."name", m."key", m."aliases", m."concept_name", m."tags", m."description"),
  "name_vector" = to_tsvector('english'::regconfig, metric_name_text(m."name", m."key", m."aliases")),
  "forms" = metric_forms(m."name", m."key", m."aliases"),
  "parent_id" = metric_parent(m."id")
FROM "metric" m WHERE m."id" = s."id";

INSERT INTO "search_term" ("org_id", "term")
SELECT DISTINCT m."org_id", t.term
FROM "metric" m CROSS JOIN LATERAL search_terms(
  metric_name_text(m."name", m."key", m."aliases") || ' ' || search_split(m."concept_name") || ' ' || search_split(array_to_string(m."tags", ' '))) AS t(term)
ON CONFLICT DO NOTHING;
