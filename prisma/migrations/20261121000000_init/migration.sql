-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- Search (trigram similarity for typos, available in PGlite as well)
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- CreateEnum
CREATE TYPE "Plan" AS ENUM ('developer', 'starter', 'team', 'enterprise', 'design_partner');

-- CreateEnum
CREATE TYPE "PricingState" AS ENUM ('active', 'unavailable');

-- CreateEnum
CREATE TYPE "Role" AS ENUM ('owner', 'admin', 'member', 'viewer');

-- CreateEnum
CREATE TYPE "LifecycleStatus" AS ENUM ('DRAFT', 'VALIDATED', 'CANDIDATE', 'APPROVED', 'RELEASED', 'DEPRECATED');

-- CreateEnum
CREATE TYPE "MetricScope" AS ENUM ('enterprise_canonical', 'domain_canonical', 'exploratory');

-- CreateEnum
CREATE TYPE "VersionStatus" AS ENUM ('draft', 'approved', 'released', 'superseded');

-- CreateEnum
CREATE TYPE "ApprovalDecision" AS ENUM ('approved', 'rejected');

-- CreateEnum
CREATE TYPE "RelationshipKind" AS ENUM ('variant_of', 'supersedes', 'related_to', 'conflicts_with');

-- CreateEnum
CREATE TYPE "ValidationStatus" AS ENUM ('passed', 'failed');

-- CreateEnum
CREATE TYPE "OpenResolved" AS ENUM ('open', 'resolved');

-- CreateTable
CREATE TABLE "organization" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "slug" TEXT NOT NULL,
    "plan" "Plan" NOT NULL,
    "pricing_state" "PricingState" NOT NULL DEFAULT 'active',
    "fiscal_calendar_start_month" SMALLINT NOT NULL DEFAULT 1,
    "summary_daily_cap" INTEGER,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "organization_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "app_user" (
    "id" UUID NOT NULL,
    "email" TEXT NOT NULL,
    "display_name" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "app_user_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "membership" (
    "org_id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "role" "Role" NOT NULL,

    CONSTRAINT "membership_pkey" PRIMARY KEY ("org_id","user_id")
);

-- CreateTable
CREATE TABLE "session" (
    "id" UUID NOT NULL,
    "token_hash" TEXT NOT NULL,
    "user_id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "session_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "project" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "name" TEXT NOT NULL,

    CONSTRAINT "project_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "domain" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "name" TEXT NOT NULL,

    CONSTRAINT "domain_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_key" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "key_hash" TEXT NOT NULL,
    "key_prefix" TEXT NOT NULL,
    "scopes" TEXT[],
    "sandbox" BOOLEAN NOT NULL DEFAULT false,
    "rate_limit_per_minute" INTEGER,
    "created_by_user_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),
    "last_used_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_key_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "metric" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "project_id" UUID NOT NULL,
    "domain_id" UUID,
    "key" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL,
    "metric_type" TEXT NOT NULL,
    "lifecycle_status" "LifecycleStatus" NOT NULL,
    "definition_version" TEXT NOT NULL,
    "policy_tier" TEXT NOT NULL,
    "owner_team" TEXT NOT NULL,
    "owner_display_name" TEXT,
    "scope" "MetricScope" NOT NULL,
    "tags" TEXT[],
    "concept_name" TEXT NOT NULL,
    "template_name" TEXT NOT NULL,
    "sql_expression" TEXT NOT NULL,
    "grains" TEXT[],
    "default_grain" TEXT NOT NULL,
    "dimensions" JSONB NOT NULL DEFAULT '[]',
    "filters" TEXT[],
    "source_refs" JSONB NOT NULL DEFAULT '[]',
    "expression" JSONB,
    "dependencies" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "bd_included" TEXT NOT NULL DEFAULT '',
    "bd_excluded" TEXT NOT NULL DEFAULT '',
    "bd_time_window" TEXT NOT NULL DEFAULT '',
    "bd_caveats" TEXT NOT NULL DEFAULT '',
    "bd_legacy_description" TEXT NOT NULL DEFAULT '',
    "time_semantics" JSONB,
    "deprecated_framing_rules" JSONB NOT NULL DEFAULT '[]',
    "dimension_map" JSONB NOT NULL DEFAULT '{}',
    "column_aliases" JSONB NOT NULL DEFAULT '{}',
    "consumer_contexts" JSONB NOT NULL DEFAULT '{}',
    "policy_examples" JSONB NOT NULL DEFAULT '[]',
    "resolved_parameters" JSONB NOT NULL DEFAULT '{}',
    "rendered_sql_examples" JSONB NOT NULL DEFAULT '[]',
    "latest_closed_period" JSONB,
    "approval_state" JSONB,
    "approver_role" TEXT,
    "approver_user" TEXT,
    "approved_at" TEXT,
    "effective_from" TEXT,
    "effective_to" TEXT,
    "next_review_date" TEXT,

    CONSTRAINT "metric_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "metric_version" (
    "id" UUID NOT NULL,
    "metric_id" UUID NOT NULL,
    "definition_version" TEXT NOT NULL,
    "status" "VersionStatus" NOT NULL,
    "released_at" TIMESTAMPTZ(3),
    "change_summary" TEXT NOT NULL DEFAULT '',

    CONSTRAINT "metric_version_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "approval" (
    "id" UUID NOT NULL,
    "metric_id" UUID NOT NULL,
    "version_id" UUID,
    "approver_user_id" UUID,
    "approver_role" TEXT NOT NULL,
    "decision" "ApprovalDecision" NOT NULL,
    "decided_at" TIMESTAMPTZ(3) NOT NULL,
    "comment" TEXT NOT NULL DEFAULT '',

    CONSTRAINT "approval_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "metric_relationship" (
    "id" UUID NOT NULL,
    "metric_id" UUID NOT NULL,
    "kind" "RelationshipKind" NOT NULL,
    "target_metric_id" UUID NOT NULL,

    CONSTRAINT "metric_relationship_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "validation" (
    "id" UUID NOT NULL,
    "metric_id" UUID NOT NULL,
    "ran_at" TIMESTAMPTZ(3) NOT NULL,
    "status" "ValidationStatus" NOT NULL,
    "details" TEXT NOT NULL DEFAULT '',

    CONSTRAINT "validation_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "challenge" (
    "id" UUID NOT NULL,
    "metric_id" UUID NOT NULL,
    "status" "OpenResolved" NOT NULL,
    "raised_by_user_id" UUID,
    "reason" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "challenge_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "thread" (
    "id" UUID NOT NULL,
    "metric_id" UUID NOT NULL,
    "intent" TEXT NOT NULL,
    "resolution_status" "OpenResolved" NOT NULL,
    "title" TEXT NOT NULL DEFAULT '',
    "created_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "thread_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "message" (
    "id" UUID NOT NULL,
    "thread_id" UUID NOT NULL,
    "metric_id" UUID NOT NULL,
    "author_user_id" UUID NOT NULL,
    "body" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deleted_at" TIMESTAMPTZ(3),
    "pinned_at" TIMESTAMPTZ(3),
    "pinned_by_user_id" UUID,

    CONSTRAINT "message_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "discussion_summary" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "metric_id" UUID NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "summary" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "discussion_summary_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "meter_event" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "metric_id" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "api_key_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "meter_event_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "organization_slug_key" ON "organization"("slug");

-- CreateIndex
CREATE UNIQUE INDEX "app_user_email_key" ON "app_user"("email");

-- CreateIndex
CREATE INDEX "membership_user_id_idx" ON "membership"("user_id");

-- CreateIndex
CREATE UNIQUE INDEX "session_token_hash_key" ON "session"("token_hash");

-- CreateIndex
CREATE INDEX "session_user_id_idx" ON "session"("user_id");

-- CreateIndex
CREATE UNIQUE INDEX "project_org_id_id_key" ON "project"("org_id", "id");

-- CreateIndex
CREATE UNIQUE INDEX "domain_org_id_id_key" ON "domain"("org_id", "id");

-- CreateIndex
CREATE UNIQUE INDEX "api_key_key_hash_key" ON "api_key"("key_hash");

-- CreateIndex
CREATE INDEX "api_key_org_id_created_at_idx" ON "api_key"("org_id", "created_at");

-- CreateIndex
CREATE INDEX "metric_org_id_name_id_idx" ON "metric"("org_id", "name", "id");

-- CreateIndex
CREATE INDEX "metric_org_id_lifecycle_status_name_id_idx" ON "metric"("org_id", "lifecycle_status", "name", "id");

-- CreateIndex
CREATE INDEX "metric_org_id_policy_tier_name_id_idx" ON "metric"("org_id", "policy_tier", "name", "id");

-- CreateIndex
CREATE INDEX "metric_org_id_scope_name_id_idx" ON "metric"("org_id", "scope", "name", "id");

-- CreateIndex
CREATE INDEX "metric_org_id_metric_type_name_id_idx" ON "metric"("org_id", "metric_type", "name", "id");

-- CreateIndex
CREATE UNIQUE INDEX "metric_org_id_key_key" ON "metric"("org_id", "key");

-- CreateIndex
CREATE UNIQUE INDEX "metric_org_id_id_key" ON "metric"("org_id", "id");

-- CreateIndex
CREATE INDEX "metric_version_metric_id_released_at_idx" ON "metric_version"("metric_id", "released_at");

-- CreateIndex
CREATE INDEX "approval_metric_id_decided_at_idx" ON "approval"("metric_id", "decided_at");

-- CreateIndex
CREATE INDEX "metric_relationship_target_metric_id_idx" ON "metric_relationship"("target_metric_id");

-- CreateIndex
CREATE UNIQUE INDEX "metric_relationship_metric_id_kind_target_metric_id_key" ON "metric_relationship"("metric_id", "kind", "target_metric_id");

-- CreateIndex
CREATE INDEX "validation_metric_id_ran_at_idx" ON "validation"("metric_id", "ran_at");

-- CreateIndex
CREATE INDEX "challenge_metric_id_status_idx" ON "challenge"("metric_id", "status");

-- CreateIndex
CREATE INDEX "thread_metric_id_intent_resolution_status_idx" ON "thread"("metric_id", "intent", "resolution_status");

-- CreateIndex
CREATE INDEX "message_thread_id_created_at_idx" ON "message"("thread_id", "created_at");

-- CreateIndex
CREATE INDEX "message_metric_id_deleted_at_idx" ON "message"("metric_id", "deleted_at");

-- CreateIndex
CREATE INDEX "message_metric_id_pinned_at_idx" ON "message"("metric_id", "pinned_at" DESC);

-- CreateIndex
CREATE INDEX "discussion_summary_org_id_created_at_idx" ON "discussion_summary"("org_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "discussion_summary_org_id_metric_id_fingerprint_key" ON "discussion_summary"("org_id", "metric_id", "fingerprint");

-- CreateIndex
CREATE UNIQUE INDEX "meter_event_org_id_kind_metric_id_fingerprint_key" ON "meter_event"("org_id", "kind", "metric_id", "fingerprint");

-- AddForeignKey
ALTER TABLE "membership" ADD CONSTRAINT "membership_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "membership" ADD CONSTRAINT "membership_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "app_user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "session" ADD CONSTRAINT "session_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "app_user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "session" ADD CONSTRAINT "session_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "project" ADD CONSTRAINT "project_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "domain" ADD CONSTRAINT "domain_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_key" ADD CONSTRAINT "api_key_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_key" ADD CONSTRAINT "api_key_created_by_user_id_fkey" FOREIGN KEY ("created_by_user_id") REFERENCES "app_user"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "metric" ADD CONSTRAINT "metric_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "metric" ADD CONSTRAINT "metric_org_id_project_id_fkey" FOREIGN KEY ("org_id", "project_id") REFERENCES "project"("org_id", "id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "metric" ADD CONSTRAINT "metric_org_id_domain_id_fkey" FOREIGN KEY ("org_id", "domain_id") REFERENCES "domain"("org_id", "id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "metric_version" ADD CONSTRAINT "metric_version_metric_id_fkey" FOREIGN KEY ("metric_id") REFERENCES "metric"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "approval" ADD CONSTRAINT "approval_metric_id_fkey" FOREIGN KEY ("metric_id") REFERENCES "metric"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "approval" ADD CONSTRAINT "approval_version_id_fkey" FOREIGN KEY ("version_id") REFERENCES "metric_version"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "metric_relationship" ADD CONSTRAINT "metric_relationship_metric_id_fkey" FOREIGN KEY ("metric_id") REFERENCES "metric"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "metric_relationship" ADD CONSTRAINT "metric_relationship_target_metric_id_fkey" FOREIGN KEY ("target_metric_id") REFERENCES "metric"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "validation" ADD CONSTRAINT "validation_metric_id_fkey" FOREIGN KEY ("metric_id") REFERENCES "metric"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "challenge" ADD CONSTRAINT "challenge_metric_id_fkey" FOREIGN KEY ("metric_id") REFERENCES "metric"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "thread" ADD CONSTRAINT "thread_metric_id_fkey" FOREIGN KEY ("metric_id") REFERENCES "metric"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_thread_id_fkey" FOREIGN KEY ("thread_id") REFERENCES "thread"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_metric_id_fkey" FOREIGN KEY ("metric_id") REFERENCES "metric"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_author_user_id_fkey" FOREIGN KEY ("author_user_id") REFERENCES "app_user"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_pinned_by_user_id_fkey" FOREIGN KEY ("pinned_by_user_id") REFERENCES "app_user"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "discussion_summary" ADD CONSTRAINT "discussion_summary_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "discussion_summary" ADD CONSTRAINT "discussion_summary_metric_id_fkey" FOREIGN KEY ("metric_id") REFERENCES "metric"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "meter_event" ADD CONSTRAINT "meter_event_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "meter_event" ADD CONSTRAINT "meter_event_metric_id_fkey" FOREIGN KEY ("metric_id") REFERENCES "metric"("id") ON DELETE CASCADE ON UPDATE CASCADE;


-- Listing order is by name in code-point order, the same on every server
-- whatever its default collation.
ALTER TABLE "metric" ALTER COLUMN "name" TYPE TEXT COLLATE "C";

-- Search documents, kept by PostgreSQL itself (not in the Prisma schema: they
-- are read only by the search SQL in src/metric/search.ts).
-- array_to_string is STABLE in general but immutable for text[], which is
-- what generated columns require.
CREATE FUNCTION metric_search_text(name text, key text, concept text, tags text[]) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT lower(name || ' ' || replace(key, '_', ' ') || ' ' || replace(concept, '_', ' ') || ' ' || array_to_string(tags, ' ')) $$;

CREATE FUNCTION metric_search_vector(name text, key text, concept text, tags text[], description text) RETURNS tsvector
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT
    setweight(to_tsvector('english'::regconfig, name || ' ' || replace(key, '_', ' ')), 'A') ||
    setweight(to_tsvector('english'::regconfig, replace(concept, '_', ' ') || ' ' || array_to_string(tags, ' ')), 'B') ||
    setweight(to_tsvector('english'::regconfig, description), 'C') $$;

ALTER TABLE "metric"
  ADD COLUMN "search_text" text GENERATED ALWAYS AS (metric_search_text("name", "key", "concept_name", "tags")) STORED,
  ADD COLUMN "search_vector" tsvector GENERATED ALWAYS AS (metric_search_vector("name", "key", "concept_name", "tags", "description")) STORED;

CREATE INDEX "metric_search_vector_idx" ON "metric" USING gin ("search_vector");
CREATE INDEX "metric_search_text_trgm_idx" ON "metric" USING gin ("search_text" gin_trgm_ops);
