-- Service tokens for automation (registry applies and validation evidence
-- from CI), their audit trail, and the source of validation evidence: the
-- same result (metric, ran_at, source) is recorded once.

-- CreateTable
CREATE TABLE "service_token" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "token_prefix" TEXT NOT NULL,
    "scopes" TEXT[],
    "created_by_user_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),
    "last_used_at" TIMESTAMPTZ(3),

    CONSTRAINT "service_token_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "service_token_audit" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "service_token_id" UUID NOT NULL,
    "action" "ApiKeyAuditAction" NOT NULL,
    "actor_user_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "service_token_audit_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "service_token_token_hash_key" ON "service_token"("token_hash");

-- CreateIndex
CREATE INDEX "service_token_org_id_created_at_idx" ON "service_token"("org_id", "created_at");

-- CreateIndex
CREATE INDEX "service_token_audit_org_id_created_at_idx" ON "service_token_audit"("org_id", "created_at");

-- AddForeignKey
ALTER TABLE "service_token" ADD CONSTRAINT "service_token_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "service_token" ADD CONSTRAINT "service_token_created_by_user_id_fkey" FOREIGN KEY ("created_by_user_id") REFERENCES "app_user"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "service_token_audit" ADD CONSTRAINT "service_token_audit_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "service_token_audit" ADD CONSTRAINT "service_token_audit_service_token_id_fkey" FOREIGN KEY ("service_token_id") REFERENCES "service_token"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "service_token_audit" ADD CONSTRAINT "service_token_audit_actor_user_id_fkey" FOREIGN KEY ("actor_user_id") REFERENCES "app_user"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AlterTable
ALTER TABLE "validation" ADD COLUMN "source" TEXT NOT NULL DEFAULT '';

-- CreateIndex
CREATE UNIQUE INDEX "validation_metric_id_ran_at_source_key" ON "validation"("metric_id", "ran_at", "source");

-- AlterTable: the hash of the registry document entry a metric was last applied from
ALTER TABLE "metric" ADD COLUMN "applied_hash" TEXT;

-- applied_hash says "this metric is as its registry entry left it", so that an apply reads no
-- further a metric whose entry hashes the same. Any write that an apply did not make (an
-- operator's SQL, a restore, a cascade from another metric's deletion) to the metric or to the
-- versions, approvals or relationships an apply compares clears it, and the next apply (or
-- --check) compares the metric in full. An apply marks its own transaction with
-- `SET LOCAL registry.apply = 'on'`.
--
-- Function bodies are E'' strings with \073 for their semicolons (see metric_etag_versions).
CREATE FUNCTION "registry_apply_active"() RETURNS boolean LANGUAGE sql STABLE
  AS E'SELECT coalesce(current_setting(''registry.apply'', true), '''') = ''on''';

CREATE FUNCTION "metric_applied_hash_kept"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  IF NOT registry_apply_active() THEN
    NEW."applied_hash" := NULL\073
  END IF\073
  RETURN NEW\073
END';

CREATE TRIGGER "metric_applied_hash_kept" BEFORE UPDATE ON "metric"
  FOR EACH ROW WHEN (OLD."applied_hash" IS NOT NULL) EXECUTE FUNCTION "metric_applied_hash_kept"();

CREATE FUNCTION "metric_applied_hash_child_written"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  IF registry_apply_active() THEN
    RETURN NULL\073
  END IF\073
  IF TG_OP <> ''DELETE'' THEN
    UPDATE "metric" SET "applied_hash" = NULL
    WHERE "applied_hash" IS NOT NULL AND "id" IN (SELECT "metric_id" FROM "new_rows")\073
  END IF\073
  IF TG_OP <> ''INSERT'' THEN
    UPDATE "metric" SET "applied_hash" = NULL
    WHERE "applied_hash" IS NOT NULL AND "id" IN (SELECT "metric_id" FROM "old_rows")\073
  END IF\073
  RETURN NULL\073
END';

-- Transition tables allow one event per trigger.
CREATE TRIGGER "metric_applied_hash_version_inserted" AFTER INSERT ON "metric_version"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_applied_hash_child_written"();
CREATE TRIGGER "metric_applied_hash_version_updated" AFTER UPDATE ON "metric_version"
  REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_applied_hash_child_written"();
CREATE TRIGGER "metric_applied_hash_version_deleted" AFTER DELETE ON "metric_version"
  REFERENCING OLD TABLE AS "old_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_applied_hash_child_written"();
CREATE TRIGGER "metric_applied_hash_approval_inserted" AFTER INSERT ON "approval"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_applied_hash_child_written"();
CREATE TRIGGER "metric_applied_hash_approval_updated" AFTER UPDATE ON "approval"
  REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_applied_hash_child_written"();
CREATE TRIGGER "metric_applied_hash_approval_deleted" AFTER DELETE ON "approval"
  REFERENCING OLD TABLE AS "old_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_applied_hash_child_written"();
CREATE TRIGGER "metric_applied_hash_relationship_inserted" AFTER INSERT ON "metric_relationship"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_applied_hash_child_written"();
CREATE TRIGGER "metric_applied_hash_relationship_updated" AFTER UPDATE ON "metric_relationship"
  REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_applied_hash_child_written"();
CREATE TRIGGER "metric_applied_hash_relationship_deleted" AFTER DELETE ON "metric_relationship"
  REFERENCING OLD TABLE AS "old_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_applied_hash_child_written"();
