-- A counter per organization, bumped in the same transaction as any change to
-- its metrics (statement-level triggers, one UPDATE per statement whatever the
-- number of rows). Readers key cached list totals by it: a total is reused
-- only while the organization's metrics are exactly as they were counted.
--
-- The function body is an E'' string with \073 for its semicolons: the Prisma
-- CLI's pg driver adapter splits a migration at every semicolon, dollar
-- quotes included.
ALTER TABLE "organization" ADD COLUMN "metrics_version" BIGINT NOT NULL DEFAULT 0;

CREATE FUNCTION "bump_metrics_version"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  IF TG_OP <> ''DELETE'' THEN
    UPDATE "organization" SET "metrics_version" = "metrics_version" + 1
    WHERE "id" IN (SELECT DISTINCT "org_id" FROM "new_rows")\073
  END IF\073
  IF TG_OP <> ''INSERT'' THEN
    UPDATE "organization" SET "metrics_version" = "metrics_version" + 1
    WHERE "id" IN (SELECT DISTINCT "org_id" FROM "old_rows")\073
  END IF\073
  RETURN NULL\073
END';

-- Transition tables allow one event per trigger.
CREATE TRIGGER "metric_inserted" AFTER INSERT ON "metric"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "bump_metrics_version"();
CREATE TRIGGER "metric_updated" AFTER UPDATE ON "metric"
  REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "bump_metrics_version"();
CREATE TRIGGER "metric_deleted" AFTER DELETE ON "metric"
  REFERENCING OLD TABLE AS "old_rows" FOR EACH STATEMENT EXECUTE FUNCTION "bump_metrics_version"();
