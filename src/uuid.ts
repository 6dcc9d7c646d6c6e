import { createHash } from 'node:crypto';

/**
 * Any 8-4-4-4-12 hex string: what PostgreSQL's uuid type accepts, so a
 * lookup by it cannot fail on the cast. The contract's "id not a UUID" means
 * not of this shape.
 */
const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID_SHAPE.test(value);
}

/**
 * A name-based UUID (RFC 9562 version 5, SHA-1) of `name` in the namespace
 * `namespace` (itself a UUID): the same inputs always give the same id, so a
 * registry document applied to two databases gives its records the same ids.
 */
export function uuidV5(namespace: string, name: string): string {
  const digest = createHash('sha1')
    .update(Buffer.from(namespace.replaceAll('-', ''), 'hex'))
    .update(name, 'utf8')
    .digest();
  digest[6] = ((digest[6] ?? 0) & 0x0f) | 0x50;
  digest[8] = ((digest[8] ?? 0) & 0x3f) | 0x80;
  const hex = digest.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
