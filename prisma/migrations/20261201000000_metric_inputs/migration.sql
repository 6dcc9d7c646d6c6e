-- Lineage and the trust that follows it (docs/lineage.md, docs/trust.md):
--
-- - metric_input: a metric's inputs, other metrics of its organization, as
--   edges (a derived metric over two others has two rows), written by applies
--   and importers, never by a read. Both ends are metrics of one organization
--   (the same trigger rule as relationships).
-- - metric_trust_state.untrusted_inputs: the upstream metrics whose own state
--   carries over to this one (src/changes/trust-transitions.ts), kept with
--   the announced verdict by the writer that moved them, in its transaction,
--   a read takes it from here instead of walking the graph.
-- - organization.trust_policy: the registry document's rules per policy tier,
--   null keeps the server's defaults.
-- - metric_usage: reads of a metric per key and day, counted in memory and
--   written in batches (src/metric/usage.ts).
--
-- ETags (see 20261124000200_metric_etag_versions): an edge written bumps both
-- ends (the detail lists a metric's inputs and counts its dependents), a
-- change of an input's shown fields or of its announced verdict bumps its
-- direct dependents, which show them. metrics_version moves with the announced
-- verdicts too: list totals filtered by verdict are keyed by it.
--
-- Function bodies are E'' strings with \073 for their semicolons: the Prisma
-- CLI's pg driver adapter splits a migration at every semicolon.

-- CreateTable
CREATE TABLE "metric_input" (
    "metric_id" UUID NOT NULL,
    "input_metric_id" UUID NOT NULL,
    "position" INTEGER NOT NULL,

    CONSTRAINT "metric_input_pkey" PRIMARY KEY ("metric_id","input_metric_id"),
    CONSTRAINT "metric_input_not_itself" CHECK ("metric_id" <> "input_metric_id")
);

-- CreateIndex
CREATE INDEX "metric_input_input_metric_id_metric_id_idx" ON "metric_input"("input_metric_id", "metric_id");

-- AddForeignKey
ALTER TABLE "metric_input" ADD CONSTRAINT "metric_input_metric_id_fkey" FOREIGN KEY ("metric_id") REFERENCES "metric"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "metric_input" ADD CONSTRAINT "metric_input_input_metric_id_fkey" FOREIGN KEY ("input_metric_id") REFERENCES "metric"("id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "metric_trust_state" ADD COLUMN "untrusted_inputs" JSONB NOT NULL DEFAULT '[]';

ALTER TABLE "organization" ADD COLUMN "trust_policy" JSONB;

-- CreateTable
CREATE TABLE "metric_usage" (
    "metric_id" UUID NOT NULL,
    "day" DATE NOT NULL,
    "key_id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "reads" INTEGER NOT NULL,

    CONSTRAINT "metric_usage_pkey" PRIMARY KEY ("metric_id","day","key_id")
);

-- CreateIndex
CREATE INDEX "metric_usage_org_id_day_idx" ON "metric_usage"("org_id", "day");

-- AddForeignKey
ALTER TABLE "metric_usage" ADD CONSTRAINT "metric_usage_metric_id_fkey" FOREIGN KEY ("metric_id") REFERENCES "metric"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE FUNCTION "check_input_same_organization"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  IF (SELECT "org_id" FROM "metric" WHERE "id" = NEW."metric_id")
     IS DISTINCT FROM (SELECT "org_id" FROM "metric" WHERE "id" = NEW."input_metric_id") THEN
    RAISE EXCEPTION ''input % is not a metric of the organization of metric %'',
      NEW."input_metric_id", NEW."metric_id" USING ERRCODE = ''check_violation''\073
  END IF\073
  RETURN NEW\073
END';

CREATE TRIGGER "metric_input_same_organization"
  BEFORE INSERT OR UPDATE OF "metric_id", "input_metric_id" ON "metric_input"
  FOR EACH ROW EXECUTE FUNCTION "check_input_same_organization"();

CREATE FUNCTION "metric_etag_input_written"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  IF TG_OP <> ''DELETE'' THEN
    UPDATE "metric_etag" SET "version" = nextval(''metric_etag_seq'')
    WHERE "metric_id" IN (SELECT "metric_id" FROM "new_rows" UNION SELECT "input_metric_id" FROM "new_rows")\073
  END IF\073
  IF TG_OP <> ''INSERT'' THEN
    UPDATE "metric_etag" SET "version" = nextval(''metric_etag_seq'')
    WHERE "metric_id" IN (SELECT "metric_id" FROM "old_rows" UNION SELECT "input_metric_id" FROM "old_rows")\073
  END IF\073
  RETURN NULL\073
END';

CREATE TRIGGER "metric_etag_input_inserted" AFTER INSERT ON "metric_input"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_input_written"();
CREATE TRIGGER "metric_etag_input_updated" AFTER UPDATE ON "metric_input"
  REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_input_written"();
CREATE TRIGGER "metric_etag_input_deleted" AFTER DELETE ON "metric_input"
  REFERENCING OLD TABLE AS "old_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_input_written"();

-- The metric itself, the metrics related to it in either direction, and its
-- direct dependents, when a field they show of it changed.
CREATE OR REPLACE FUNCTION "metric_etag_updated"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  UPDATE "metric_etag" SET "version" = nextval(''metric_etag_seq'')
  WHERE "metric_id" IN (
    SELECT "id" FROM "new_rows"
    UNION
    SELECT r."metric_id" FROM "metric_relationship" r
    WHERE r."target_metric_id" IN (SELECT n."id" FROM "new_rows" n JOIN "old_rows" o ON o."id" = n."id"
      WHERE (n."key", n."name", n."lifecycle_status") IS DISTINCT FROM (o."key", o."name", o."lifecycle_status"))
    UNION
    SELECT r."target_metric_id" FROM "metric_relationship" r
    WHERE r."metric_id" IN (SELECT n."id" FROM "new_rows" n JOIN "old_rows" o ON o."id" = n."id"
      WHERE (n."key", n."name", n."lifecycle_status") IS DISTINCT FROM (o."key", o."name", o."lifecycle_status"))
    UNION
    SELECT i."metric_id" FROM "metric_input" i
    WHERE i."input_metric_id" IN (SELECT n."id" FROM "new_rows" n JOIN "old_rows" o ON o."id" = n."id"
      WHERE (n."key", n."name") IS DISTINCT FROM (o."key", o."name")))\073
  RETURN NULL\073
END';

-- An announced verdict written: the metric and its direct dependents (which
-- show their inputs' verdicts), and the organization's metrics_version.
CREATE FUNCTION "trust_state_written"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  UPDATE "metric_etag" SET "version" = nextval(''metric_etag_seq'')
  WHERE "metric_id" IN (
    SELECT "metric_id" FROM "new_rows"
    UNION
    SELECT i."metric_id" FROM "metric_input" i WHERE i."input_metric_id" IN (SELECT "metric_id" FROM "new_rows"))\073
  UPDATE "organization" SET "metrics_version" = "metrics_version" + 1
  WHERE "id" IN (SELECT DISTINCT m."org_id" FROM "metric" m WHERE m."id" IN (SELECT "metric_id" FROM "new_rows"))\073
  RETURN NULL\073
END';

CREATE TRIGGER "trust_state_inserted" AFTER INSERT ON "metric_trust_state"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "trust_state_written"();
CREATE TRIGGER "trust_state_updated" AFTER UPDATE ON "metric_trust_state"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "trust_state_written"();
