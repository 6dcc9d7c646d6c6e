-- Discussions written through the API (docs/discussions.md): what a write
-- needs to know and to record of threads, messages and challenges.
--
-- - thread: its author (a user, or the service token of a bot, at most one
--   of them, both null for a thread loaded without one) and who resolved it
--   and when. Threads loaded before this migration take the author of their
--   first message.
-- - message: its author is a user or a service token, exactly one of them
--   (author_user_id may now be null), and when its body was last edited
--   (edited_at, null when never). updated_at keeps moving with every edit,
--   as the discussion fingerprint reads it.
-- - challenge: a bot's challenge names its token, and a decision (accepted
--   or rejected) comes with its reason, who decided and when. A decided
--   challenge is resolved.
--
-- Every new column is nullable: a metric archived by a prune before this
-- migration is restored from a snapshot without them (src/registry/archive.ts).
--
-- A service token is never deleted (it is revoked), except with its
-- organization, whose metrics and their messages go in the same statement,
-- so a message's token reference is checked at the end of the statement
-- (NO ACTION).
--
-- The ETag triggers of thread, message and challenge (migration
-- 20261124000200_metric_etag_versions) fire on any update of a row, the new
-- columns included. A token's name, shown as the author of a bot's pinned
-- note, never changes.

CREATE TYPE "ChallengeDecision" AS ENUM ('accepted', 'rejected');

ALTER TABLE "thread"
  ADD COLUMN "author_user_id" UUID,
  ADD COLUMN "author_token_id" UUID,
  ADD COLUMN "resolved_at" TIMESTAMPTZ(3),
  ADD COLUMN "resolved_by_user_id" UUID,
  ADD COLUMN "resolved_by_token_id" UUID,
  ADD CONSTRAINT "thread_at_most_one_author" CHECK (num_nonnulls("author_user_id", "author_token_id") <= 1),
  ADD CONSTRAINT "thread_at_most_one_resolver" CHECK (num_nonnulls("resolved_by_user_id", "resolved_by_token_id") <= 1);

ALTER TABLE "thread" ADD CONSTRAINT "thread_author_user_id_fkey" FOREIGN KEY ("author_user_id") REFERENCES "app_user"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "thread" ADD CONSTRAINT "thread_author_token_id_fkey" FOREIGN KEY ("author_token_id") REFERENCES "service_token"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "thread" ADD CONSTRAINT "thread_resolved_by_user_id_fkey" FOREIGN KEY ("resolved_by_user_id") REFERENCES "app_user"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "thread" ADD CONSTRAINT "thread_resolved_by_token_id_fkey" FOREIGN KEY ("resolved_by_token_id") REFERENCES "service_token"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- A metric's threads, newest first (the product's list of threads).
CREATE INDEX "thread_metric_id_created_at_id_idx" ON "thread"("metric_id", "created_at", "id");

UPDATE "thread" t SET "author_user_id" = f."author_user_id"
FROM (SELECT DISTINCT ON ("thread_id") "thread_id", "author_user_id" FROM "message"
      ORDER BY "thread_id", "created_at", "id") f
WHERE f."thread_id" = t."id";

ALTER TABLE "message"
  ALTER COLUMN "author_user_id" DROP NOT NULL,
  ADD COLUMN "author_token_id" UUID,
  ADD COLUMN "edited_at" TIMESTAMPTZ(3),
  ADD CONSTRAINT "message_one_author" CHECK (num_nonnulls("author_user_id", "author_token_id") = 1);

ALTER TABLE "message" ADD CONSTRAINT "message_author_token_id_fkey" FOREIGN KEY ("author_token_id") REFERENCES "service_token"("id") ON DELETE NO ACTION ON UPDATE CASCADE;

ALTER TABLE "challenge"
  ADD COLUMN "raised_by_token_id" UUID,
  ADD COLUMN "decision" "ChallengeDecision",
  ADD COLUMN "decision_reason" TEXT,
  ADD COLUMN "decided_by_user_id" UUID,
  ADD COLUMN "decided_at" TIMESTAMPTZ(3),
  ADD CONSTRAINT "challenge_decided_is_resolved" CHECK ("decision" IS NULL OR "status" = 'resolved');

ALTER TABLE "challenge" ADD CONSTRAINT "challenge_raised_by_token_id_fkey" FOREIGN KEY ("raised_by_token_id") REFERENCES "service_token"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "challenge" ADD CONSTRAINT "challenge_decided_by_user_id_fkey" FOREIGN KEY ("decided_by_user_id") REFERENCES "app_user"("id") ON DELETE SET NULL ON UPDATE CASCADE;
