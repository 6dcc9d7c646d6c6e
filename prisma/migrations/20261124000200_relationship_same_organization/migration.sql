-- A relationship's source and target are metrics of one organization: the
-- fixture loader checks it, and now the database keeps it for every writer.
--
-- Triggers rather than composite foreign keys on (org_id, id): the relationship
-- rows and every read of them stay as they are. The check on a relationship
-- is complete because a metric never changes organization (second trigger).
--
-- The function bodies are E'' strings with \073 for their semicolons: the
-- Prisma CLI's pg driver adapter splits a migration at every semicolon.
CREATE FUNCTION "check_relationship_same_organization"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  IF (SELECT "org_id" FROM "metric" WHERE "id" = NEW."metric_id")
     IS DISTINCT FROM (SELECT "org_id" FROM "metric" WHERE "id" = NEW."target_metric_id") THEN
    RAISE EXCEPTION ''relationship target % is not a metric of the organization of metric %'',
      NEW."target_metric_id", NEW."metric_id" USING ERRCODE = ''check_violation''\073
  END IF\073
  RETURN NEW\073
END';

CREATE TRIGGER "metric_relationship_same_organization"
  BEFORE INSERT OR UPDATE OF "metric_id", "target_metric_id" ON "metric_relationship"
  FOR EACH ROW EXECUTE FUNCTION "check_relationship_same_organization"();

CREATE FUNCTION "forbid_metric_organization_change"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  RAISE EXCEPTION ''metric % cannot move to another organization'', OLD."id" USING ERRCODE = ''check_violation''\073
END';

CREATE TRIGGER "metric_organization_fixed"
  BEFORE UPDATE OF "org_id" ON "metric"
  FOR EACH ROW WHEN (OLD."org_id" IS DISTINCT FROM NEW."org_id")
  EXECUTE FUNCTION "forbid_metric_organization_change"();

-- Relationships written before this migration: the same rule.
DO E'
BEGIN
  IF EXISTS (
    SELECT 1 FROM "metric_relationship" r
      JOIN "metric" s ON s."id" = r."metric_id"
      JOIN "metric" t ON t."id" = r."target_metric_id"
     WHERE s."org_id" <> t."org_id"
  ) THEN
    RAISE EXCEPTION ''metric_relationship has rows whose target is in another organization: remove them first''\073
  END IF\073
END';
