-- Webhooks (src/webhooks/): endpoints with their delivery cursor, retry state and lease, and
-- the latest attempts of each.

-- CreateTable
CREATE TABLE "webhook" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "url" TEXT NOT NULL,
    "types" TEXT[],
    "description" TEXT,
    "secret" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "delivered_seq" BIGINT NOT NULL,
    "attempt" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "failing_since" TIMESTAMPTZ(3),
    "disabled_at" TIMESTAMPTZ(3),
    "disabled_reason" TEXT,
    "leased_until" TIMESTAMPTZ(3),
    "leased_by" UUID,

    CONSTRAINT "webhook_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_delivery" (
    "id" BIGSERIAL NOT NULL,
    "webhook_id" UUID NOT NULL,
    "event_id" UUID NOT NULL,
    "event_seq" BIGINT,
    "type" TEXT NOT NULL,
    "attempt" INTEGER NOT NULL,
    "status_code" INTEGER,
    "error" TEXT,
    "duration_ms" INTEGER NOT NULL,
    "time" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "webhook_delivery_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "webhook_org_id_idx" ON "webhook"("org_id");

-- CreateIndex
CREATE INDEX "webhook_next_attempt_at_idx" ON "webhook"("next_attempt_at");

-- CreateIndex
CREATE INDEX "webhook_delivery_webhook_id_id_idx" ON "webhook_delivery"("webhook_id", "id");

-- AddForeignKey
ALTER TABLE "webhook" ADD CONSTRAINT "webhook_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_delivery" ADD CONSTRAINT "webhook_delivery_webhook_id_fkey" FOREIGN KEY ("webhook_id") REFERENCES "webhook"("id") ON DELETE CASCADE ON UPDATE CASCADE;

