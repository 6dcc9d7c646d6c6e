-- Search reads a narrow copy of each metric instead of the metric rows.
--
-- A broad term matches a large share of a registry ("revenue": 37% of the
-- bench's 100,000 metrics), and ranking all its matches read the tsvector of
-- every one from `metric`, about 1.6 kB a row: most of the table's pages.
-- `metric_search` holds only what a search filters, ranks and orders by
-- (about 400 bytes a row), so the same ranking touches a seventh of the pages.
--
-- `search_term` holds the words of each organization's metrics (name, key,
-- concept, tags). A query word that is none of them is corrected to the words
-- it is similar to (trigram similarity) or part of, and the corrected query is
-- matched with the full-text index: the fuzzy part of a search is a look-up
-- among the organization's words, not a similarity computed over its metrics.
-- Words are only added: one whose last metric changed or went stays and at
-- worst offers a correction that matches nothing. Numbers (the digits of keys)
-- are no words here: they grow with the registry and are not typed with typos.
--
-- Both are kept by statement-level triggers in the same transaction as the
-- metrics (deletes cascade). Function bodies are E'' strings with \073 for
-- their semicolons: the Prisma CLI's pg driver adapter splits a migration at
-- every semicolon.
DROP INDEX "metric_search_vector_idx";
DROP INDEX "metric_search_text_trgm_idx";
ALTER TABLE "metric" DROP COLUMN "search_text", DROP COLUMN "search_vector";

-- As before, but a metric without tags is searchable too (text || NULL is NULL).
CREATE OR REPLACE FUNCTION metric_search_text(name text, key text, concept text, tags text[]) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT lower(name || ' ' || replace(key, '_', ' ') || ' ' || replace(concept, '_', ' ') || ' ' || coalesce(array_to_string(tags, ' '), '')) $$;

CREATE OR REPLACE FUNCTION metric_search_vector(name text, key text, concept text, tags text[], description text) RETURNS tsvector
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT
    setweight(to_tsvector('english'::regconfig, name || ' ' || replace(key, '_', ' ')), 'A') ||
    setweight(to_tsvector('english'::regconfig, replace(concept, '_', ' ') || ' ' || coalesce(array_to_string(tags, ' '), '')), 'B') ||
    setweight(to_tsvector('english'::regconfig, description), 'C') $$;

CREATE FUNCTION search_terms(search_text text) RETURNS SETOF text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT DISTINCT w FROM regexp_split_to_table(search_text, '[^[:alnum:]]+') AS w WHERE length(w) > 1 AND w !~ '^[0-9]+$' $$;

CREATE TABLE "metric_search" (
    "id" UUID NOT NULL PRIMARY KEY REFERENCES "metric"("id") ON DELETE CASCADE,
    "org_id" UUID NOT NULL,
    "name" TEXT COLLATE "C" NOT NULL,
    -- for the exact-name and name-prefix ranks, without lower() on every match
    "name_lower" TEXT COLLATE "C" GENERATED ALWAYS AS (lower("name")) STORED,
    "lifecycle_status" "LifecycleStatus" NOT NULL,
    "policy_tier" TEXT NOT NULL,
    "scope" "MetricScope" NOT NULL,
    "metric_type" TEXT NOT NULL,
    "search_vector" tsvector NOT NULL
);
CREATE INDEX "metric_search_vector_idx" ON "metric_search" USING gin ("search_vector");

CREATE TABLE "search_term" (
    "org_id" UUID NOT NULL REFERENCES "organization"("id") ON DELETE CASCADE,
    "term" TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY ("org_id", "term")
);
CREATE INDEX "search_term_trgm_idx" ON "search_term" USING gin ("term" gin_trgm_ops);

CREATE FUNCTION "index_metric_search"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  INSERT INTO "metric_search" ("id", "org_id", "name", "lifecycle_status", "policy_tier", "scope", "metric_type", "search_vector")
  SELECT n."id", n."org_id", n."name", n."lifecycle_status", n."policy_tier", n."scope", n."metric_type",
    metric_search_vector(n."name", n."key", n."concept_name", n."tags", n."description")
  FROM "new_rows" n
  ON CONFLICT ("id") DO UPDATE SET "org_id" = EXCLUDED."org_id", "name" = EXCLUDED."name",
    "lifecycle_status" = EXCLUDED."lifecycle_status", "policy_tier" = EXCLUDED."policy_tier",
    "scope" = EXCLUDED."scope", "metric_type" = EXCLUDED."metric_type", "search_vector" = EXCLUDED."search_vector"\073
  INSERT INTO "search_term" ("org_id", "term")
  SELECT DISTINCT n."org_id", t.term
  FROM "new_rows" n CROSS JOIN LATERAL search_terms(metric_search_text(n."name", n."key", n."concept_name", n."tags")) AS t(term)
  ON CONFLICT DO NOTHING\073
  RETURN NULL\073
END';

CREATE TRIGGER "metric_search_inserted" AFTER INSERT ON "metric"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "index_metric_search"();
CREATE TRIGGER "metric_search_updated" AFTER UPDATE ON "metric"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "index_metric_search"();

INSERT INTO "metric_search" ("id", "org_id", "name", "lifecycle_status", "policy_tier", "scope", "metric_type", "search_vector")
SELECT "id", "org_id", "name", "lifecycle_status", "policy_tier", "scope", "metric_type",
  metric_search_vector("name", "key", "concept_name", "tags", "description")
FROM "metric";

INSERT INTO "search_term" ("org_id", "term")
SELECT DISTINCT m."org_id", t.term
FROM "metric" m CROSS JOIN LATERAL search_terms(metric_search_text(m."name", m."key", m."concept_name", m."tags")) AS t(term)
ON CONFLICT DO NOTHING;
