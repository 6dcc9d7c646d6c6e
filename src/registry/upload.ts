/**
 * Registry uploads in parts (docs/registry.md, "Uploads in parts"): a
 * registry larger than one document may list (MAX_DOCUMENT_METRICS) is sent
 * as several registry documents, the parts of one upload. Each part is read
 * and checked as a document is when it arrives, and kept a metric a row
 * (`registry_upload_metric`), so that applying the upload
 * (src/registry/apply-upload.ts) reads it back a chunk at a time: neither
 * the whole registry nor a whole part is ever held in memory at once.
 *
 * What one document cannot see is checked across the parts: a key is listed
 * in one part only, the parts are one source's, and one part at most sets
 * the trust policy. A part sent again under its number replaces it. Parts of
 * one upload are stored one at a time (as the organization's registry
 * writes are, and under the upload's row lock), so two parts sent at once
 * cannot both list a key.
 *
 * An upload belongs to its organization; it is removed once applied, when
 * deleted, and after it expires (UPLOAD_TTL_MS after it was created, removed
 * by the sweep or when the organization next creates one).
 */
import { randomUUID } from 'node:crypto';
import { insertRows } from '../db/bulk-write.js';
import { lockRegistry } from '../db/registry-lock.js';
import type { Prisma, PrismaClient } from '../generated/prisma/client.js';
import type { RegistryDocument, RegistryMetric } from './document.js';
import { RegistryError, type RegistryProblem } from './registry-error.js';

/** Parts are numbered 1 to this. */
export const MAX_UPLOAD_PARTS = 100;
/** Metrics an upload lists at most, over all its parts. */
export const MAX_UPLOAD_METRICS = 250_000;
/** The bodies of an upload's parts, in all: what one upload may keep in the database. */
export const MAX_UPLOAD_BYTES = 256 * 1024 * 1024;
/** Uploads an organization keeps open at once. */
export const MAX_OPEN_UPLOADS = 5;
/** How long an upload is kept unapplied. */
export const UPLOAD_TTL_MS = 24 * 60 * 60 * 1000;

type Tx = Prisma.TransactionClient;

/** No upload of that id in the organization (never made, applied, deleted or expired). */
export class UploadNotFound extends Error {
  override readonly name = 'UploadNotFound';
}

/** The organization has MAX_OPEN_UPLOADS uploads open already. */
export class TooManyUploads extends Error {
  override readonly name = 'TooManyUploads';
}

/** A part would take the upload past MAX_UPLOAD_METRICS metrics or MAX_UPLOAD_BYTES of bodies. */
export class UploadTooLarge extends Error {
  override readonly name = 'UploadTooLarge';

  constructor(readonly limit: 'metrics' | 'bytes') {
    super(
      `an upload holds at most ${limit === 'metrics' ? `${MAX_UPLOAD_METRICS} metrics` : `${MAX_UPLOAD_BYTES} bytes`}`,
    );
  }
}

export interface UploadPartSummary {
  part: number;
  source: string;
  metrics: number;
  /** whether the part sets the trust policy */
  trust_policy: boolean;
  received_at: string;
}

export interface UploadSummary {
  upload_id: string;
  created_at: string;
  expires_at: string;
  /** metrics over all its parts */
  metrics: number;
  parts: UploadPartSummary[];
}

/** Opens an upload for the organization, after removing its expired ones. */
export async function createUpload(prisma: PrismaClient, orgId: string, now = new Date()): Promise<UploadSummary> {
  return prisma.$transaction(async (tx) => {
    // One creation at a time per organization, so that the count of open uploads holds. Not the
    // organization's row: an apply holds it (its metrics_version) for as long as it runs.
    await tx.$queryRaw`SELECT 1 AS "locked" FROM pg_advisory_xact_lock(hashtextextended(${`registry-upload:${orgId}`}, 0))`;
    await tx.$executeRaw`DELETE FROM "registry_upload" WHERE "org_id" = ${orgId}::uuid AND "expires_at" <= ${now}`;
    const open = await tx.registryUpload.count({ where: { orgId } });
    if (open >= MAX_OPEN_UPLOADS) throw new TooManyUploads(`at most ${MAX_OPEN_UPLOADS} uploads open at once`);
    const upload = await tx.registryUpload.create({
      data: { id: randomUUID(), orgId, createdAt: now, expiresAt: new Date(now.getTime() + UPLOAD_TTL_MS) },
    });
    return {
      upload_id: upload.id,
      created_at: iso(upload.createdAt),
      expires_at: iso(upload.expiresAt),
      metrics: 0,
      parts: [],
    };
  });
}

const iso = (date: Date) => date.toISOString();

/** The upload's row, locked for the rest of the transaction when `lock`; UploadNotFound when there is none. */
export async function findUpload(
  tx: Tx,
  orgId: string,
  uploadId: string,
  options: { lock: boolean; now?: Date },
): Promise<{ id: string; createdAt: Date; expiresAt: Date }> {
  const now = options.now ?? new Date();
  const rows = await tx.$queryRawUnsafe<{ id: string; createdAt: Date; expiresAt: Date }[]>(
    `SELECT "id"::text AS "id", "created_at" AS "createdAt", "expires_at" AS "expiresAt" FROM "registry_upload"
     WHERE "id" = $1::uuid AND "org_id" = $2::uuid AND "expires_at" > $3::timestamptz${options.lock ? ' FOR UPDATE' : ''}`,
    uploadId,
    orgId,
    now,
  );
  const [upload] = rows;
  if (!upload) throw new UploadNotFound('no such upload');
  return upload;
}

/** The upload's parts in their order, each with what it holds. */
export async function uploadParts(
  tx: Tx,
  uploadId: string,
): Promise<
  { part: number; source: string; metrics: number; hasTrustPolicy: boolean; trustPolicy: unknown; receivedAt: Date }[]
> {
  return tx.registryUploadPart.findMany({
    where: { uploadId },
    select: { part: true, source: true, metrics: true, hasTrustPolicy: true, trustPolicy: true, receivedAt: true },
    orderBy: { part: 'asc' },
  });
}

/** What the upload holds so far, read in `tx`. */
async function readSummary(tx: Tx, orgId: string, uploadId: string): Promise<UploadSummary> {
  const upload = await findUpload(tx, orgId, uploadId, { lock: false });
  const parts = await uploadParts(tx, uploadId);
  return {
    upload_id: upload.id,
    created_at: iso(upload.createdAt),
    expires_at: iso(upload.expiresAt),
    metrics: parts.reduce((sum, part) => sum + part.metrics, 0),
    parts: parts.map((part) => ({
      part: part.part,
      source: part.source,
      metrics: part.metrics,
      trust_policy: part.hasTrustPolicy,
      received_at: iso(part.receivedAt),
    })),
  };
}

/** What the upload holds so far. */
export function uploadSummary(prisma: PrismaClient, orgId: string, uploadId: string): Promise<UploadSummary> {
  return prisma.$transaction((tx) => readSummary(tx, orgId, uploadId));
}

/** Removes the upload; false when there was none. */
export async function deleteUpload(prisma: PrismaClient, orgId: string, uploadId: string): Promise<boolean> {
  const removed = await prisma.$executeRaw`
    DELETE FROM "registry_upload" WHERE "id" = ${uploadId}::uuid AND "org_id" = ${orgId}::uuid`;
  return removed > 0;
}

/** How long one statement storing a part may take. */
const PART_TIMEOUT_MS = 60_000;

/** Keys a refusal names at most when a part lists keys of other parts. */
const DUPLICATES_SHOWN = 20;

/** What a part breaks of the rules across the parts, at its places. */
async function acrossParts(
  tx: Tx,
  uploadId: string,
  part: number,
  document: RegistryDocument,
): Promise<RegistryProblem[]> {
  const problems: RegistryProblem[] = [];
  const others = (await uploadParts(tx, uploadId)).filter((other) => other.part !== part);
  const otherSource = others.find((other) => other.source !== document.source);
  if (otherSource) {
    problems.push({
      path: ['source'],
      message: `the parts of an upload are one source's: part ${otherSource.part} is "${otherSource.source}", this one "${document.source}"`,
    });
  }
  const policy = others.find((other) => other.hasTrustPolicy);
  if (policy && document.trustPolicy !== undefined) {
    problems.push({
      path: ['trust_policy'],
      message: `part ${policy.part} sets the trust policy: one part of an upload may`,
    });
  }
  const placeOf = new Map(document.metrics.map((metric, m) => [metric.key, m]));
  // A probe of the unique index per key of the part: a scan of the upload's rows against 20,000 keys takes seconds.
  const duplicates = await tx.$queryRawUnsafe<{ key: string; part: number; position: number }[]>(
    `SELECT m."key", m."part", m."position" FROM unnest($3::text[]) AS k("key")
     JOIN "registry_upload_metric" m ON m."upload_id" = $1::uuid AND m."key" = k."key"
     WHERE m."part" <> $2
     ORDER BY m."part", m."position" LIMIT ${DUPLICATES_SHOWN}`,
    uploadId,
    part,
    [...placeOf.keys()],
  );
  for (const duplicate of duplicates) {
    problems.push({
      path: ['metrics', placeOf.get(duplicate.key) as number, 'key'],
      message: `duplicate key "${duplicate.key}": also parts[${duplicate.part}].metrics[${duplicate.position}]`,
    });
  }
  return problems;
}

/**
 * Stores `document` as part `part` of the upload, replacing a part of that
 * number. RegistryError when it breaks a rule across the parts, UploadTooLarge
 * past the upload's bounds; nothing is stored then.
 */
export async function storeUploadPart(
  prisma: PrismaClient,
  orgId: string,
  uploadId: string,
  part: number,
  document: RegistryDocument,
  /** the bytes of the body it came in */
  bytes: number,
  limits: { metrics: number; bytes: number } = { metrics: MAX_UPLOAD_METRICS, bytes: MAX_UPLOAD_BYTES },
): Promise<UploadSummary> {
  return prisma.$transaction(
    async (tx) => {
      // Parts are stored as the organization's registry writes are, one at a time on any instance (the
      // write queue waits for its turn holding no connection), and under the upload's row lock.
      await lockRegistry(tx, orgId);
      await findUpload(tx, orgId, uploadId, { lock: true });
      // A part is a bulk write of up to 20,000 rows: past the pool's statement timeout, which is meant for reads.
      await tx.$executeRawUnsafe(`SET LOCAL statement_timeout = ${PART_TIMEOUT_MS}`);
      const problems = await acrossParts(tx, uploadId, part, document);
      if (problems.length > 0) throw new RegistryError(problems);
      const [{ metrics = 0, bytes: kept = 0 } = {}] = await tx.$queryRaw<{ metrics: number; bytes: number }[]>`
        SELECT coalesce(sum("metrics"), 0)::int AS "metrics", coalesce(sum("bytes"), 0)::bigint::float8 AS "bytes"
        FROM "registry_upload_part" WHERE "upload_id" = ${uploadId}::uuid AND "part" <> ${part}`;
      if (metrics + document.metrics.length > limits.metrics) throw new UploadTooLarge('metrics');
      if (kept + bytes > limits.bytes) throw new UploadTooLarge('bytes');
      await tx.$executeRaw`DELETE FROM "registry_upload_part" WHERE "upload_id" = ${uploadId}::uuid AND "part" = ${part}`;
      await tx.registryUploadPart.create({
        data: {
          uploadId,
          part,
          source: document.source,
          hasTrustPolicy: document.trustPolicy !== undefined,
          trustPolicy:
            document.trustPolicy === undefined || document.trustPolicy === null
              ? undefined
              : (document.trustPolicy as Prisma.InputJsonObject),
          metrics: document.metrics.length,
          bytes,
        },
      });
      await insertRows(tx, 'registry_upload_metric', entryRows(uploadId, part, document));
      return readSummary(tx, orgId, uploadId);
    },
    { timeout: 120_000, maxWait: 30_000 },
  );
}

/** A part's metrics as rows of `registry_upload_metric`, made as the insert reads them. */
function* entryRows(uploadId: string, part: number, document: RegistryDocument) {
  for (const [position, entry] of document.metrics.entries()) {
    yield { uploadId, part, position, key: entry.key, entry, fieldsSet: document.fieldsSet[position] ?? [] };
  }
}

/** One chunk of an upload's metrics, in the order of its parts: each metric with its part and place in it. */
export interface UploadChunk {
  metrics: RegistryMetric[];
  fieldsSet: string[][];
  parts: number[];
  positions: number[];
}

/** Metrics a chunk holds: planned and written together, as an apply of a document of this size. */
const CHUNK_METRICS = 2_000;

/**
 * The upload's metrics a chunk at a time, in the order of its parts (`parts`,
 * each with its count of metrics). Each chunk is a range of places in one
 * part, found by the primary key's prefix whatever the table's statistics
 * say (a part stored a moment ago has none yet).
 */
export async function* uploadChunks(
  tx: Tx,
  uploadId: string,
  parts: readonly { part: number; metrics: number }[],
  size = CHUNK_METRICS,
): AsyncGenerator<UploadChunk> {
  for (const { part, metrics } of parts) {
    for (let from = 0; from < metrics; from += size) {
      const rows = await tx.$queryRawUnsafe<{ position: number; entry: string; fieldsSet: string[] }[]>(
        `SELECT "position", "entry"::text AS "entry", "fields_set" AS "fieldsSet" FROM "registry_upload_metric"
         WHERE "upload_id" = $1::uuid AND "part" = $2 AND "position" >= $3 AND "position" < $4
         ORDER BY "position"`,
        uploadId,
        part,
        from,
        from + size,
      );
      yield {
        metrics: rows.map((row) => JSON.parse(row.entry) as RegistryMetric),
        fieldsSet: rows.map((row) => row.fieldsSet),
        parts: rows.map(() => part),
        positions: rows.map((row) => row.position),
      };
    }
  }
}

/** What the upload lists, for the checks across all of it: every key, and the links of the metrics that have any. */
export async function uploadLinks(
  tx: Tx,
  uploadId: string,
): Promise<{
  keys: string[];
  links: (Pick<RegistryMetric, 'key' | 'relationships' | 'inputs'> & { part: number; position: number })[];
}> {
  const keys = await tx.$queryRaw<{ key: string }[]>`
    SELECT "key" FROM "registry_upload_metric" WHERE "upload_id" = ${uploadId}::uuid ORDER BY "part", "position"`;
  const links = await tx.$queryRaw<
    { part: number; position: number; key: string; relationships: RegistryMetric['relationships']; inputs: string[] }[]
  >`
    SELECT "part", "position", "key", "entry"->'relationships' AS "relationships", "entry"->'inputs' AS "inputs"
    FROM "registry_upload_metric"
    WHERE "upload_id" = ${uploadId}::uuid
      AND (jsonb_array_length("entry"->'relationships') > 0 OR jsonb_array_length("entry"->'inputs') > 0)
    ORDER BY "part", "position"`;
  return { keys: keys.map((row) => row.key), links };
}
