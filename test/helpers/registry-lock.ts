/** An organization's registry lock held from a test, as another instance's writer would hold it. */
import { lockRegistry, registryWriterTurn } from '../../src/db/registry-lock.js';
import type { Prisma, PrismaClient } from '../../src/generated/prisma/client.js';

/**
 * Takes `orgId`'s registry lock in a transaction of its own, as a queued writer labelled `label`
 * (what a refused writer is told of the holder), and holds it until the returned release is called;
 * resolves once the lock is taken and `writes` (what the writer writes meanwhile) have run. The
 * release resolves once the transaction has ended.
 */
export async function holdRegistryLock(
  prisma: PrismaClient,
  orgId: string,
  label: string,
  writes: (tx: Prisma.TransactionClient) => Promise<unknown> = async () => {},
): Promise<() => Promise<void>> {
  let release = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let held = () => {};
  const holding = new Promise<void>((resolve) => {
    held = resolve;
  });
  const transaction = registryWriterTurn({ label, locked: () => {} }, () =>
    prisma.$transaction(
      async (tx) => {
        await lockRegistry(tx, orgId);
        await writes(tx);
        held();
        await released;
      },
      { timeout: 60_000 },
    ),
  );
  await holding;
  return async () => {
    release();
    await transaction;
  };
}
