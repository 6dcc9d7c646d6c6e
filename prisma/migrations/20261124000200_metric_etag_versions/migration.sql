-- A version per metric for conditional GETs (ETag / 304) of its detail and
-- contract, bumped by statement-level triggers in the same transaction as
-- every change that alters either body:
--
-- - the metric's own row (insert creates its version, update bumps it);
-- - its versions, approvals, validations, challenges, threads and messages
--   (new, edited, deleted, pinned, unpinned: any insert, update or delete);
-- - its relationships in either direction (the detail lists its own, the
--   disambiguation hint shows both sides), cascades included;
-- - the shown fields (key, name, lifecycle_status) of the metrics it is
--   related to in either direction;
-- - the display name of the author of one of its pinned notes.
--
-- The organization's fiscal month and slug, the service's PUBLIC_APP_URL and
-- its release are part of the tag itself (read with the key), not of this
-- version.
--
-- Versions come from one sequence: a metric deleted and created again with
-- the same id never gets back a version it had. Bumps only UPDATE existing
-- rows (a child's trigger firing while its metric is being deleted finds
-- nothing to bump instead of violating the foreign key).
--
-- Function bodies are E'' strings with \073 for their semicolons: the Prisma
-- CLI's pg driver adapter splits a migration at every semicolon.
CREATE SEQUENCE "metric_etag_seq";

CREATE TABLE "metric_etag" (
    "metric_id" UUID NOT NULL PRIMARY KEY REFERENCES "metric"("id") ON DELETE CASCADE,
    "version" BIGINT NOT NULL DEFAULT nextval('metric_etag_seq')
);

INSERT INTO "metric_etag" ("metric_id") SELECT "id" FROM "metric";

CREATE FUNCTION "metric_etag_inserted"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  INSERT INTO "metric_etag" ("metric_id") SELECT "id" FROM "new_rows"
  ON CONFLICT ("metric_id") DO UPDATE SET "version" = nextval(''metric_etag_seq'')\073
  RETURN NULL\073
END';

-- The metric itself, and the metrics related to it in either direction when
-- a field they show of it changed.
CREATE FUNCTION "metric_etag_updated"() RETURNS trigger LANGUAGE plpgsql AS E'
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
      WHERE (n."key", n."name", n."lifecycle_status") IS DISTINCT FROM (o."key", o."name", o."lifecycle_status")))\073
  RETURN NULL\073
END';

CREATE TRIGGER "metric_etag_inserted" AFTER INSERT ON "metric"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_inserted"();
CREATE TRIGGER "metric_etag_updated" AFTER UPDATE ON "metric"
  REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_updated"();

-- Rows that belong to one metric (metric_id): bump the metric of every row
-- written, before and after.
CREATE FUNCTION "metric_etag_child_written"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  IF TG_OP <> ''DELETE'' THEN
    UPDATE "metric_etag" SET "version" = nextval(''metric_etag_seq'')
    WHERE "metric_id" IN (SELECT "metric_id" FROM "new_rows")\073
  END IF\073
  IF TG_OP <> ''INSERT'' THEN
    UPDATE "metric_etag" SET "version" = nextval(''metric_etag_seq'')
    WHERE "metric_id" IN (SELECT "metric_id" FROM "old_rows")\073
  END IF\073
  RETURN NULL\073
END';

-- Relationships: both ends, before and after.
CREATE FUNCTION "metric_etag_relationship_written"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  IF TG_OP <> ''DELETE'' THEN
    UPDATE "metric_etag" SET "version" = nextval(''metric_etag_seq'')
    WHERE "metric_id" IN (SELECT "metric_id" FROM "new_rows" UNION SELECT "target_metric_id" FROM "new_rows")\073
  END IF\073
  IF TG_OP <> ''INSERT'' THEN
    UPDATE "metric_etag" SET "version" = nextval(''metric_etag_seq'')
    WHERE "metric_id" IN (SELECT "metric_id" FROM "old_rows" UNION SELECT "target_metric_id" FROM "old_rows")\073
  END IF\073
  RETURN NULL\073
END';

-- A renamed user: the metrics where a pinned, non-deleted message of theirs
-- is shown as an agent context note with their name.
CREATE FUNCTION "metric_etag_user_renamed"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  UPDATE "metric_etag" SET "version" = nextval(''metric_etag_seq'')
  WHERE "metric_id" IN (
    SELECT g."metric_id" FROM "message" g
    WHERE g."pinned_at" IS NOT NULL AND g."deleted_at" IS NULL
      AND g."author_user_id" IN (SELECT n."id" FROM "new_rows" n JOIN "old_rows" o ON o."id" = n."id"
        WHERE n."display_name" IS DISTINCT FROM o."display_name"))\073
  RETURN NULL\073
END';

CREATE TRIGGER "metric_etag_user_renamed" AFTER UPDATE ON "app_user"
  REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_user_renamed"();

-- Transition tables allow one event per trigger.
CREATE TRIGGER "metric_etag_relationship_inserted" AFTER INSERT ON "metric_relationship"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_relationship_written"();
CREATE TRIGGER "metric_etag_relationship_updated" AFTER UPDATE ON "metric_relationship"
  REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_relationship_written"();
CREATE TRIGGER "metric_etag_relationship_deleted" AFTER DELETE ON "metric_relationship"
  REFERENCING OLD TABLE AS "old_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_relationship_written"();
CREATE TRIGGER "metric_etag_metric_version_inserted" AFTER INSERT ON "metric_version"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_child_written"();
CREATE TRIGGER "metric_etag_metric_version_updated" AFTER UPDATE ON "metric_version"
  REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_child_written"();
CREATE TRIGGER "metric_etag_metric_version_deleted" AFTER DELETE ON "metric_version"
  REFERENCING OLD TABLE AS "old_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_child_written"();
CREATE TRIGGER "metric_etag_approval_inserted" AFTER INSERT ON "approval"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_child_written"();
CREATE TRIGGER "metric_etag_approval_updated" AFTER UPDATE ON "approval"
  REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_child_written"();
CREATE TRIGGER "metric_etag_approval_deleted" AFTER DELETE ON "approval"
  REFERENCING OLD TABLE AS "old_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_child_written"();
CREATE TRIGGER "metric_etag_validation_inserted" AFTER INSERT ON "validation"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_child_written"();
CREATE TRIGGER "metric_etag_validation_updated" AFTER UPDATE ON "validation"
  REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_child_written"();
CREATE TRIGGER "metric_etag_validation_deleted" AFTER DELETE ON "validation"
  REFERENCING OLD TABLE AS "old_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_child_written"();
CREATE TRIGGER "metric_etag_challenge_inserted" AFTER INSERT ON "challenge"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_child_written"();
CREATE TRIGGER "metric_etag_challenge_updated" AFTER UPDATE ON "challenge"
  REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_child_written"();
CREATE TRIGGER "metric_etag_challenge_deleted" AFTER DELETE ON "challenge"
  REFERENCING OLD TABLE AS "old_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_child_written"();
CREATE TRIGGER "metric_etag_thread_inserted" AFTER INSERT ON "thread"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_child_written"();
CREATE TRIGGER "metric_etag_thread_updated" AFTER UPDATE ON "thread"
  REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_child_written"();
CREATE TRIGGER "metric_etag_thread_deleted" AFTER DELETE ON "thread"
  REFERENCING OLD TABLE AS "old_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_child_written"();
CREATE TRIGGER "metric_etag_message_inserted" AFTER INSERT ON "message"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_child_written"();
CREATE TRIGGER "metric_etag_message_updated" AFTER UPDATE ON "message"
  REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_child_written"();
CREATE TRIGGER "metric_etag_message_deleted" AFTER DELETE ON "message"
  REFERENCING OLD TABLE AS "old_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_etag_child_written"();
