/**
 * Any 8-4-4-4-12 hex string: what PostgreSQL's uuid type accepts, so a
 * lookup by it cannot fail on the cast. The contract's "id not a UUID" means
 * not of this shape.
 */
const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID_SHAPE.test(value);
}
