/**
 * Feed cursors: opaque to clients, they say which organization's feed and
 * after which event number. They are not secret (a forged one of the
 * caller's own organization reads only what the caller may read anyway) but
 * a cursor of another organization is refused, never served.
 */

const VERSION = 1;
const BYTES = 1 + 16 + 8;
/** Event numbers are PostgreSQL bigints: a forged position past them is no cursor, not a failed statement. */
const MAX_SEQ = 2n ** 63n - 1n;

/** The cursor after event `seq` (0: before the first) of `orgId`'s feed. */
export function encodeCursor(orgId: string, seq: bigint): string {
  const bytes = Buffer.alloc(BYTES);
  bytes.writeUInt8(VERSION, 0);
  Buffer.from(orgId.replaceAll('-', ''), 'hex').copy(bytes, 1);
  bytes.writeBigUInt64BE(seq, 17);
  return bytes.toString('base64url');
}

/** The event number a cursor resumes after; null when it is not a cursor of `orgId`'s feed. */
export function decodeCursor(cursor: string, orgId: string): bigint | null {
  if (cursor.length > 64 || !/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  const bytes = Buffer.from(cursor, 'base64url');
  if (bytes.length !== BYTES || bytes.readUInt8(0) !== VERSION || bytes.toString('base64url') !== cursor) return null;
  if (bytes.subarray(1, 17).toString('hex') !== orgId.replaceAll('-', '').toLowerCase()) return null;
  const seq = bytes.readBigUInt64BE(17);
  return seq > MAX_SEQ ? null : seq;
}
