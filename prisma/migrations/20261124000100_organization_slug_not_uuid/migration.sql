-- Operators name an organization by id or by slug (the admin CLI's --org). A
-- slug shaped like a UUID could name another organization's id, so no slug
-- may have that shape (src/uuid.ts: any 8-4-4-4-12 hex string, either case).
ALTER TABLE "organization" ADD CONSTRAINT "organization_slug_not_uuid"
  CHECK ("slug" !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$');
