-- Many sources, one registry (docs/registry.md#sources): every apply names
-- its source (a registry document's `source`, an importer's kind and project
-- such as dbt:scooters). A metric belongs to the source that created it
-- (`source`, which prune reads), and each document field it has was set by
-- one source (`field_sources`, field name to source), so that a source that
-- does not set a field leaves it to the one that did.
-- Metrics written before sources belong to "registry", the default source of
-- a registry document.
ALTER TABLE "metric" ADD COLUMN "source" TEXT NOT NULL DEFAULT 'registry';
ALTER TABLE "metric" ADD COLUMN "field_sources" JSONB NOT NULL DEFAULT '{}';

-- CreateIndex
CREATE INDEX "metric_org_id_source_idx" ON "metric"("org_id", "source");
