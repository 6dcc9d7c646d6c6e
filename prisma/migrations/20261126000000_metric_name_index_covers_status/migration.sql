-- The name-order index of a list page also carries the lifecycle status, so that a page filtered by
-- several statuses (the legacy `status` filter: review is VALIDATED or CANDIDATE) is cut by walking
-- the name index and skipping the other statuses, without a heap fetch per entry. Without it, the
-- planned statement read every metric of those statuses from the status index and sorted them to cut
-- one page (25,000 entries at 100,000 metrics). Same name, same key columns: Prisma's schema cannot
-- say INCLUDE, so schema.prisma keeps @@index([orgId, name, id]).
DROP INDEX "metric_org_id_name_id_idx";
CREATE INDEX "metric_org_id_name_id_idx" ON "metric" ("org_id", "name", "id") INCLUDE ("lifecycle_status");
