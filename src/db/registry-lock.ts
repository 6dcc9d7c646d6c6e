/**
 * One writer of an organization's registry at a time: applies and validation
 * evidence take this transaction-scoped advisory lock first, so each reads
 * the state the previous one left. Readers take no lock.
 */
import type { Prisma } from '../generated/prisma/client.js';

export async function lockRegistry(tx: Prisma.TransactionClient, orgId: string): Promise<void> {
  await tx.$queryRaw`SELECT 1 AS locked FROM pg_advisory_xact_lock(hashtextextended(${`registry:${orgId}`}, 0))`;
}
