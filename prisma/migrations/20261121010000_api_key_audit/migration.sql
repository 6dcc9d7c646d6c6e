-- Audit trail of API-key creation and revocation (HTTP routes and admin CLI)

-- CreateEnum
CREATE TYPE "ApiKeyAuditAction" AS ENUM ('created', 'revoked');

-- CreateTable
CREATE TABLE "api_key_audit" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "api_key_id" UUID NOT NULL,
    "action" "ApiKeyAuditAction" NOT NULL,
    "actor_user_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "api_key_audit_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "api_key_audit_org_id_created_at_idx" ON "api_key_audit"("org_id", "created_at");

-- AddForeignKey
ALTER TABLE "api_key_audit" ADD CONSTRAINT "api_key_audit_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_key_audit" ADD CONSTRAINT "api_key_audit_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_key"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_key_audit" ADD CONSTRAINT "api_key_audit_actor_user_id_fkey" FOREIGN KEY ("actor_user_id") REFERENCES "app_user"("id") ON DELETE SET NULL ON UPDATE CASCADE;

