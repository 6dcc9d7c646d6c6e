-- The sweep forgets sessions and one-time links past their expiry, by these indexes.
CREATE INDEX "session_expires_at_idx" ON "session"("expires_at");
CREATE INDEX "login_link_expires_at_idx" ON "login_link"("expires_at");
