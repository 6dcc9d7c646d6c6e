-- The change feed: events recorded in the transaction of the change that
-- causes them (an outbox), numbered per organization, and the trust verdict
-- last announced per metric (src/changes/).

-- CreateTable
CREATE TABLE "change_feed" (
    "org_id" UUID NOT NULL,
    "last_seq" BIGINT NOT NULL DEFAULT 0,
    "pruned_through" BIGINT NOT NULL DEFAULT 0,
    "swept_at" TIMESTAMPTZ(3),

    CONSTRAINT "change_feed_pkey" PRIMARY KEY ("org_id")
);

-- CreateTable
CREATE TABLE "change_event" (
    "org_id" UUID NOT NULL,
    "seq" BIGINT NOT NULL,
    "id" UUID NOT NULL,
    "type" TEXT NOT NULL,
    "subject" UUID NOT NULL,
    "time" TIMESTAMPTZ(3) NOT NULL,
    "data" JSON NOT NULL,

    CONSTRAINT "change_event_pkey" PRIMARY KEY ("org_id","seq")
);

-- CreateTable
CREATE TABLE "metric_trust_state" (
    "metric_id" UUID NOT NULL,
    "verdict" TEXT NOT NULL,
    "reasons" TEXT[],
    "preferred_metric_id" UUID,
    "evaluated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "metric_trust_state_pkey" PRIMARY KEY ("metric_id")
);

-- CreateIndex
CREATE UNIQUE INDEX "change_event_id_key" ON "change_event"("id");

-- CreateIndex
CREATE INDEX "change_event_org_id_time_idx" ON "change_event"("org_id", "time");

-- AddForeignKey
ALTER TABLE "change_feed" ADD CONSTRAINT "change_feed_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "change_event" ADD CONSTRAINT "change_event_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "metric_trust_state" ADD CONSTRAINT "metric_trust_state_metric_id_fkey" FOREIGN KEY ("metric_id") REFERENCES "metric"("id") ON DELETE CASCADE ON UPDATE CASCADE;
