-- Time changes a verdict in one way only: validation evidence becomes stale. Every other fact of a
-- verdict changes with a write, and the writer evaluates what it can move in its transaction. So
-- each announced verdict keeps the time its evidence goes stale (null: never validated, or stale
-- already), and the periodic sweep evaluates the metrics whose time has come, with what is built on
-- them, instead of every metric of every organization each interval (at 1,000,000 metrics a pass
-- over all of them took about 6 minutes against an interval of 60 seconds).
ALTER TABLE "metric_trust_state" ADD COLUMN "stale_at" TIMESTAMPTZ(3);
CREATE INDEX "metric_trust_state_stale_at_idx" ON "metric_trust_state" ("stale_at") WHERE "stale_at" IS NOT NULL;

-- The stale-validation days of the server's policy (TRUST_STALE_VALIDATION_DAYS) that the
-- organization's verdicts were last all evaluated with: the stored stale_at follow from it, so a
-- sweep under another value evaluates every metric again (null: never, as after this migration).
ALTER TABLE "change_feed" ADD COLUMN "swept_stale_days" DOUBLE PRECISION;

-- A verdict's state rewritten for its stale_at alone (new evidence that moves no verdict) shows
-- nothing new: only the rows whose verdict, reasons, preferred metric or untrusted inputs changed
-- bump the ETags of the metric and its direct dependents, and the organization's metrics_version.
CREATE FUNCTION "trust_state_changed"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  WITH "moved" AS (
    SELECT n."metric_id" FROM "new_rows" n JOIN "old_rows" o ON o."metric_id" = n."metric_id"
    WHERE (n."verdict", n."reasons", n."preferred_metric_id", n."untrusted_inputs")
      IS DISTINCT FROM (o."verdict", o."reasons", o."preferred_metric_id", o."untrusted_inputs")),
  "tagged" AS (
    UPDATE "metric_etag" SET "version" = nextval(''metric_etag_seq'')
    WHERE "metric_id" IN (
      SELECT "metric_id" FROM "moved"
      UNION
      SELECT i."metric_id" FROM "metric_input" i WHERE i."input_metric_id" IN (SELECT "metric_id" FROM "moved")))
  UPDATE "organization" SET "metrics_version" = "metrics_version" + 1
  WHERE "id" IN (SELECT DISTINCT m."org_id" FROM "metric" m WHERE m."id" IN (SELECT "metric_id" FROM "moved"))\073
  RETURN NULL\073
END';

DROP TRIGGER "trust_state_updated" ON "metric_trust_state";
CREATE TRIGGER "trust_state_updated" AFTER UPDATE ON "metric_trust_state"
  REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "trust_state_changed"();
