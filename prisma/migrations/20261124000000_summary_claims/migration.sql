-- A summary generation under way: claimed under the organization's summary
-- lock before the generator is called, deleted in the statement that stores
-- the summary (or when the generation fails). A live claim (expires_at in the
-- future) counts against the organization's daily cap, so concurrent
-- generations for different metrics cannot all pass it, and tells another
-- instance that this discussion state is being generated, so it waits for the
-- cached row instead of generating it again. No connection or transaction is
-- held while the generator runs, and a claim left by a crashed instance expires.
CREATE TABLE "discussion_summary_claim" (
  "org_id" UUID NOT NULL REFERENCES "organization" ("id") ON DELETE CASCADE,
  "metric_id" UUID NOT NULL REFERENCES "metric" ("id") ON DELETE CASCADE,
  "fingerprint" TEXT NOT NULL,
  "token" UUID NOT NULL,
  "expires_at" TIMESTAMPTZ(3) NOT NULL,
  PRIMARY KEY ("org_id", "metric_id", "fingerprint")
);
CREATE INDEX "discussion_summary_claim_org_id_expires_at_idx" ON "discussion_summary_claim" ("org_id", "expires_at");
