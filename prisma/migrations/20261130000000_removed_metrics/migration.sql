-- Metrics a prune removed, kept whole for the change feed's retention so that
-- a later apply listing their key restores them (src/registry/archive.ts):
-- apart from the registry's tables, so that no reader of the registry has to
-- tell removed metrics from kept ones.

-- CreateTable
CREATE TABLE "removed_metric" (
    "org_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "metric_id" UUID NOT NULL,
    "removed_at" TIMESTAMPTZ(3) NOT NULL,
    "snapshot" JSONB NOT NULL,

    CONSTRAINT "removed_metric_pkey" PRIMARY KEY ("org_id","key")
);

-- AddForeignKey
ALTER TABLE "removed_metric" ADD CONSTRAINT "removed_metric_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;
