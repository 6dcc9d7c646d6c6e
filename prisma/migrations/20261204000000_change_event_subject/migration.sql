-- A metric's own change history (its page lists its newest events): the events of one subject, newest first,
-- read through this index whatever the size of the organization's feed.
CREATE INDEX "change_event_org_id_subject_seq_idx" ON "change_event"("org_id", "subject", "seq");
