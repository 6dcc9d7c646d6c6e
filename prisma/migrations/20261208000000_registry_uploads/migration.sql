-- Registry uploads in parts (docs/registry.md, "Uploads in parts"): a registry
-- larger than one document (MAX_DOCUMENT_METRICS) is sent as several, each
-- read and checked as it arrives and kept here, then applied whole in one
-- transaction. An upload is removed once applied, when deleted, or after it
-- expires. A key is in one part of an upload at most: the unique index on
-- (upload_id, key) keeps that for parts sent at once.
CREATE TABLE "registry_upload" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "registry_upload_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "registry_upload_org_id_expires_at_idx" ON "registry_upload"("org_id", "expires_at");

ALTER TABLE "registry_upload" ADD CONSTRAINT "registry_upload_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- One document of an upload, as its number: its source, its trust policy
-- (has_trust_policy: the document has one, which may be null) and its size
-- (its metrics, and the bytes of the body it came in).
CREATE TABLE "registry_upload_part" (
    "upload_id" UUID NOT NULL,
    "part" INTEGER NOT NULL,
    "source" TEXT NOT NULL,
    "has_trust_policy" BOOLEAN NOT NULL,
    "trust_policy" JSONB,
    "metrics" INTEGER NOT NULL,
    "bytes" INTEGER NOT NULL,
    "received_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "registry_upload_part_pkey" PRIMARY KEY ("upload_id", "part")
);

ALTER TABLE "registry_upload_part" ADD CONSTRAINT "registry_upload_part_upload_id_fkey" FOREIGN KEY ("upload_id") REFERENCES "registry_upload"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Each metric of a part, as read and checked (defaults laid in): its entry
-- and the fields it sets, at its place in its document.
CREATE TABLE "registry_upload_metric" (
    "upload_id" UUID NOT NULL,
    "part" INTEGER NOT NULL,
    "position" INTEGER NOT NULL,
    "key" TEXT NOT NULL,
    "entry" JSONB NOT NULL,
    "fields_set" TEXT[],

    CONSTRAINT "registry_upload_metric_pkey" PRIMARY KEY ("upload_id", "part", "position")
);

CREATE UNIQUE INDEX "registry_upload_metric_upload_id_key_key" ON "registry_upload_metric"("upload_id", "key");

ALTER TABLE "registry_upload_metric" ADD CONSTRAINT "registry_upload_metric_upload_id_part_fkey" FOREIGN KEY ("upload_id", "part") REFERENCES "registry_upload_part"("upload_id", "part") ON DELETE CASCADE ON UPDATE CASCADE;
