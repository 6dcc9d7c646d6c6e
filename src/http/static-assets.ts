/**
 * The pages a person opens (GraphiQL, /docs) and their scripts, served as the
 * static files they are: each rendered once per process, with a strong ETag
 * (304 on a matching If-None-Match), a Cache-Control that lets a browser keep
 * it (a year for a file whose name carries its content hash), and compressed
 * with brotli or gzip when the client accepts it. Each encoding is compressed
 * once, off the event loop, and kept.
 */
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { firstHeader } from './headers.js';
import { parseIfNoneMatch } from './if-none-match.js';

const brotli = promisify(brotliCompress);
const gzipped = promisify(gzip);

/** A file whose URL names its content: a browser may keep it for a year without asking again. */
export const IMMUTABLE = 'public, max-age=31536000, immutable';
/** A page at a fixed URL: kept, but revalidated (a 304 when unchanged) on every use. */
export const REVALIDATE = 'no-cache';

type Encoding = 'br' | 'gzip';

export interface StaticAsset {
  readonly body: Buffer;
  readonly contentType: string;
  readonly etag: string;
  readonly cacheControl: string;
  /** the first 16 hex digits of the body's SHA-256, for versioned file names */
  readonly version: string;
  /** extra headers (a page's Content-Security-Policy) */
  readonly headers: Readonly<Record<string, string>>;
  /** the compressed bodies, each made on first use and kept */
  readonly compressed: Map<Encoding, Promise<Buffer>>;
}

/** Below this size compression saves less than it costs. */
const MIN_COMPRESSED_BYTES = 1024;

export function staticAsset(
  content: string | Buffer,
  contentType: string,
  cacheControl: string,
  headers: Record<string, string> = {},
): StaticAsset {
  const body = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  const digest = createHash('sha256').update(body).digest();
  return {
    body,
    contentType,
    etag: `"${digest.toString('base64url')}"`,
    cacheControl,
    version: digest.toString('hex').slice(0, 16),
    headers,
    compressed: new Map(),
  };
}

function compress(asset: StaticAsset, encoding: Encoding): Promise<Buffer> {
  let pending = asset.compressed.get(encoding);
  if (!pending) {
    pending =
      encoding === 'br'
        ? brotli(asset.body, {
            params: {
              // Quality 9 compresses a 5 MB script to within a few percent of 11 in a fraction of the time.
              [constants.BROTLI_PARAM_QUALITY]: 9,
              [constants.BROTLI_PARAM_SIZE_HINT]: asset.body.length,
              [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
            },
          })
        : gzipped(asset.body, { level: 9 });
    // A failure is not kept: the next request tries again (and this one is served uncompressed).
    pending.catch(() => asset.compressed.delete(encoding));
    asset.compressed.set(encoding, pending);
  }
  return pending;
}

/** Whether an If-None-Match header names this tag (weak comparison, as RFC 9110 asks of it), or is `*`. */
export function ifNoneMatchHits(header: string | undefined, etag: string): boolean {
  const tags = parseIfNoneMatch(header);
  return tags === '*' || tags?.includes(etag) === true;
}

/**
 * The encoding to send: brotli, then gzip, when Accept-Encoding accepts it
 * (a q of 0 refuses; `*` accepts both); none otherwise.
 */
export function chooseEncoding(header: string | undefined): Encoding | null {
  if (!header) return null;
  const accepted = new Map<string, number>();
  for (const item of header.split(',')) {
    const [name = '', ...params] = item.split(';');
    const q = params.map((p) => p.trim()).find((p) => p.toLowerCase().startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    accepted.set(name.trim().toLowerCase(), Number.isFinite(weight) ? weight : 0);
  }
  const weightOf = (encoding: Encoding) => accepted.get(encoding) ?? accepted.get('*') ?? 0;
  if (weightOf('br') > 0) return 'br';
  if (weightOf('gzip') > 0) return 'gzip';
  return null;
}

/** Answers the request with the asset: 304 when the client holds it, else the (compressed) body. */
/**
 * A content-coding's strong validator: the identity body's tag with the
 * coding inside its quotes (`"tag-br"`), as RFC 9110 (8.8.3) asks of a
 * strong ETag for another representation. A tag of any coding of the same
 * content answers 304: the bytes it names decode to the same body.
 */
const codedTag = (etag: string, encoding: Encoding | null) => (encoding ? `${etag.slice(0, -1)}-${encoding}"` : etag);

export async function sendAsset(request: FastifyRequest, reply: FastifyReply, asset: StaticAsset) {
  const encoding =
    asset.body.length >= MIN_COMPRESSED_BYTES ? chooseEncoding(firstHeader(request, 'accept-encoding')) : null;
  const body = encoding ? await compress(asset, encoding).catch(() => null) : null;
  const etag = codedTag(asset.etag, body ? encoding : null);
  reply.header('ETag', etag);
  reply.header('Cache-Control', asset.cacheControl);
  reply.header('Vary', 'Accept-Encoding');
  reply.header('X-Content-Type-Options', 'nosniff');
  for (const [name, value] of Object.entries(asset.headers)) reply.header(name, value);
  const presented = firstHeader(request, 'if-none-match');
  if (
    [null, 'br', 'gzip'].some((coding) => ifNoneMatchHits(presented, codedTag(asset.etag, coding as Encoding | null)))
  ) {
    return reply.status(304).send();
  }
  reply.type(asset.contentType);
  if (body && encoding) return reply.header('Content-Encoding', encoding).send(body);
  return reply.send(asset.body);
}
