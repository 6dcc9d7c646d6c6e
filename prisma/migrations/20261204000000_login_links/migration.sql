-- One-time sign-in links (docs/sign-in.md): an operator's `login:link` prints
-- a link that signs one member into one organization, once, within 15 minutes.
-- Only the SHA-256 of its token is kept, so this table cannot sign anyone in.
-- `used_at` is set by the one statement that consumes a link, so two visits
-- of the same link never both sign in.
CREATE TABLE "login_link" (
    "id" UUID NOT NULL,
    "token_hash" TEXT NOT NULL,
    "user_id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "next" TEXT,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "used_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "login_link_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "login_link_token_hash_key" ON "login_link"("token_hash");
CREATE INDEX "login_link_user_id_idx" ON "login_link"("user_id");
CREATE INDEX "login_link_org_id_idx" ON "login_link"("org_id");

-- AddForeignKey
ALTER TABLE "login_link" ADD CONSTRAINT "login_link_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "app_user"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "login_link" ADD CONSTRAINT "login_link_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;
