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
