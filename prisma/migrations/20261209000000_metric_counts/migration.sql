-- The counts of an organization's metrics by lifecycle status, scope, domain, owner team and
-- announced verdict (the catalog's facets and the home page), and of those needing attention,
-- kept as the rows change instead of counted on each read: at 1,000,000 metrics one count of
-- them all read 3 GB and took longer than the statement timeout. Statement-level triggers add up
-- each statement's old and new rows (its transition tables), so a bulk write changes each count
-- once. Writers of one organization's metrics and verdicts hold its registry lock, so the count
-- rows are updated one transaction at a time, each statement updates them in key order.

-- The organization of each announced verdict, so that a verdict's removal (with its metric,
-- whose row is gone by then) still finds the counts to take it from. Writers that do not say it
-- (a verdict restored from an archive made before this column) have it filled from the metric.
ALTER TABLE "metric_trust_state" ADD COLUMN "org_id" UUID;
UPDATE "metric_trust_state" s SET "org_id" = m."org_id" FROM "metric" m WHERE m."id" = s."metric_id";
ALTER TABLE "metric_trust_state" ALTER COLUMN "org_id" SET NOT NULL;

CREATE FUNCTION "trust_state_org"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  IF NEW."org_id" IS NULL THEN
    SELECT m."org_id" INTO NEW."org_id" FROM "metric" m WHERE m."id" = NEW."metric_id"\073
  END IF\073
  RETURN NEW\073
END';
CREATE TRIGGER "trust_state_org" BEFORE INSERT ON "metric_trust_state"
  FOR EACH ROW EXECUTE FUNCTION "trust_state_org"();

-- facet: lifecycle, scope, domain (the domain id), ownerTeam, trust (the verdict, metrics without
-- one are the rest of the total), attention (validation, objections, do_not_use: the kinds of
-- metrics needing attention). The value is text, '' for none (a metric without a domain). A count
-- may be 0: readers skip those.
CREATE TABLE "metric_count" (
    "org_id" UUID NOT NULL,
    "facet" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "count" BIGINT NOT NULL,

    CONSTRAINT "metric_count_pkey" PRIMARY KEY ("org_id", "facet", "value"),
    CONSTRAINT "metric_count_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- What a metric row's values count for: one row per facet.
CREATE FUNCTION "metric_facet_values"("lifecycle_status" TEXT, "scope" TEXT, "domain_id" UUID, "owner_team" TEXT)
  RETURNS TABLE ("facet" TEXT, "value" TEXT) LANGUAGE sql IMMUTABLE AS E'
  VALUES (''lifecycle'', "lifecycle_status"), (''scope'', "scope"),
    (''domain'', coalesce("domain_id"::text, '''')), (''ownerTeam'', "owner_team")';

-- What an announced verdict counts for: its verdict, and each kind of attention it needs.
CREATE FUNCTION "trust_facet_values"("verdict" TEXT, "reasons" TEXT[]) RETURNS TABLE ("facet" TEXT, "value" TEXT)
  LANGUAGE sql IMMUTABLE AS E'
  SELECT ''trust'', "verdict"
  UNION ALL SELECT ''attention'', ''validation'' WHERE "reasons" && ARRAY[''failed_validation'', ''stale_validation'']::text[]
  UNION ALL SELECT ''attention'', ''objections'' WHERE ''open_objections'' = ANY("reasons")
  UNION ALL SELECT ''attention'', ''do_not_use'' WHERE "verdict" = ''do_not_use''';

-- Each trigger adds what its statement's rows counted for: 1 for a new row, -1 for an old one.
-- An update that moves no count (the same values before and after) writes nothing.
CREATE FUNCTION "metric_counts_moved"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  IF TG_OP = ''INSERT'' THEN
    INSERT INTO "metric_count" ("org_id", "facet", "value", "count")
    SELECT c."org_id", f."facet", f."value", sum(c."delta") FROM (
      SELECT n."org_id", n."lifecycle_status", n."scope", n."domain_id", n."owner_team", 1 AS "delta" FROM "new_rows" n) c
    CROSS JOIN LATERAL "metric_facet_values"(c."lifecycle_status"::text, c."scope"::text, c."domain_id", c."owner_team") f
    GROUP BY 1, 2, 3 HAVING sum(c."delta") <> 0 ORDER BY 1, 2, 3
    ON CONFLICT ("org_id", "facet", "value") DO UPDATE SET "count" = "metric_count"."count" + EXCLUDED."count"\073
  ELSIF TG_OP = ''DELETE'' THEN
    INSERT INTO "metric_count" ("org_id", "facet", "value", "count")
    SELECT c."org_id", f."facet", f."value", sum(c."delta") FROM (
      SELECT o."org_id", o."lifecycle_status", o."scope", o."domain_id", o."owner_team", -1 AS "delta" FROM "old_rows" o) c
    CROSS JOIN LATERAL "metric_facet_values"(c."lifecycle_status"::text, c."scope"::text, c."domain_id", c."owner_team") f
    GROUP BY 1, 2, 3 HAVING sum(c."delta") <> 0 ORDER BY 1, 2, 3
    ON CONFLICT ("org_id", "facet", "value") DO UPDATE SET "count" = "metric_count"."count" + EXCLUDED."count"\073
  ELSE
    INSERT INTO "metric_count" ("org_id", "facet", "value", "count")
    SELECT c."org_id", f."facet", f."value", sum(c."delta") FROM (
      SELECT n."org_id", n."lifecycle_status", n."scope", n."domain_id", n."owner_team", 1 AS "delta" FROM "new_rows" n
      UNION ALL
      SELECT o."org_id", o."lifecycle_status", o."scope", o."domain_id", o."owner_team", -1 AS "delta" FROM "old_rows" o) c
    CROSS JOIN LATERAL "metric_facet_values"(c."lifecycle_status"::text, c."scope"::text, c."domain_id", c."owner_team") f
    GROUP BY 1, 2, 3 HAVING sum(c."delta") <> 0 ORDER BY 1, 2, 3
    ON CONFLICT ("org_id", "facet", "value") DO UPDATE SET "count" = "metric_count"."count" + EXCLUDED."count"\073
  END IF\073
  RETURN NULL\073
END';

CREATE FUNCTION "trust_counts_moved"() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  IF TG_OP = ''INSERT'' THEN
    INSERT INTO "metric_count" ("org_id", "facet", "value", "count")
    SELECT c."org_id", f."facet", f."value", sum(c."delta") FROM (
      SELECT n."org_id", n."verdict", n."reasons", 1 AS "delta" FROM "new_rows" n) c
    CROSS JOIN LATERAL "trust_facet_values"(c."verdict", c."reasons") f
    GROUP BY 1, 2, 3 HAVING sum(c."delta") <> 0 ORDER BY 1, 2, 3
    ON CONFLICT ("org_id", "facet", "value") DO UPDATE SET "count" = "metric_count"."count" + EXCLUDED."count"\073
  ELSIF TG_OP = ''DELETE'' THEN
    INSERT INTO "metric_count" ("org_id", "facet", "value", "count")
    SELECT c."org_id", f."facet", f."value", sum(c."delta") FROM (
      SELECT o."org_id", o."verdict", o."reasons", -1 AS "delta" FROM "old_rows" o) c
    CROSS JOIN LATERAL "trust_facet_values"(c."verdict", c."reasons") f
    GROUP BY 1, 2, 3 HAVING sum(c."delta") <> 0 ORDER BY 1, 2, 3
    ON CONFLICT ("org_id", "facet", "value") DO UPDATE SET "count" = "metric_count"."count" + EXCLUDED."count"\073
  ELSE
    INSERT INTO "metric_count" ("org_id", "facet", "value", "count")
    SELECT c."org_id", f."facet", f."value", sum(c."delta") FROM (
      SELECT n."org_id", n."verdict", n."reasons", 1 AS "delta" FROM "new_rows" n
      UNION ALL
      SELECT o."org_id", o."verdict", o."reasons", -1 AS "delta" FROM "old_rows" o) c
    CROSS JOIN LATERAL "trust_facet_values"(c."verdict", c."reasons") f
    GROUP BY 1, 2, 3 HAVING sum(c."delta") <> 0 ORDER BY 1, 2, 3
    ON CONFLICT ("org_id", "facet", "value") DO UPDATE SET "count" = "metric_count"."count" + EXCLUDED."count"\073
  END IF\073
  RETURN NULL\073
END';

INSERT INTO "metric_count" ("org_id", "facet", "value", "count")
SELECT m."org_id", f."facet", f."value", count(*) FROM "metric" m
CROSS JOIN LATERAL "metric_facet_values"(m."lifecycle_status"::text, m."scope"::text, m."domain_id", m."owner_team") f
GROUP BY 1, 2, 3
UNION ALL
SELECT s."org_id", f."facet", f."value", count(*) FROM "metric_trust_state" s
CROSS JOIN LATERAL "trust_facet_values"(s."verdict", s."reasons") f
GROUP BY 1, 2, 3;

CREATE TRIGGER "metric_counts_inserted" AFTER INSERT ON "metric"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_counts_moved"();
CREATE TRIGGER "metric_counts_updated" AFTER UPDATE ON "metric"
  REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_counts_moved"();
CREATE TRIGGER "metric_counts_deleted" AFTER DELETE ON "metric"
  REFERENCING OLD TABLE AS "old_rows" FOR EACH STATEMENT EXECUTE FUNCTION "metric_counts_moved"();
CREATE TRIGGER "trust_counts_inserted" AFTER INSERT ON "metric_trust_state"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "trust_counts_moved"();
CREATE TRIGGER "trust_counts_updated" AFTER UPDATE ON "metric_trust_state"
  REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "trust_counts_moved"();
CREATE TRIGGER "trust_counts_deleted" AFTER DELETE ON "metric_trust_state"
  REFERENCING OLD TABLE AS "old_rows" FOR EACH STATEMENT EXECUTE FUNCTION "trust_counts_moved"();

-- The metrics of each kind of attention, by organization: the home page lists the first of them.
CREATE INDEX "metric_trust_state_validation_idx" ON "metric_trust_state" ("org_id")
  WHERE "reasons" && ARRAY['failed_validation', 'stale_validation']::text[];
CREATE INDEX "metric_trust_state_objections_idx" ON "metric_trust_state" ("org_id") WHERE 'open_objections' = ANY("reasons");
CREATE INDEX "metric_trust_state_do_not_use_idx" ON "metric_trust_state" ("org_id") WHERE "verdict" = 'do_not_use';
