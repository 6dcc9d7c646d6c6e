/**
 * One process at a time on an embedded database. PGlite keeps the database in
 * the memory of the process that opened it and writes it back to DATA_DIR on
 * close, so a second process (the CLI beside a running server) would work on
 * its own copy, and whichever closed last would silently overwrite the
 * other's writes. A lock file beside the data directory, holding the owner's
 * pid, refuses the second opener with a clear message instead; a lock left by
 * a process that is gone is taken over.
 */
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

export class DatabaseInUseError extends Error {
  override readonly name = 'DatabaseInUseError';
}

interface Owner {
  pid: number;
  command: string;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readOwner(path: string): Owner | null {
  try {
    const owner = JSON.parse(readFileSync(path, 'utf8')) as Partial<Owner>;
    return typeof owner.pid === 'number' ? { pid: owner.pid, command: String(owner.command ?? 'a process') } : null;
  } catch {
    return null;
  }
}

/**
 * Takes the lock of the embedded database at `dataDir` for this process
 * (`command` says who holds it, for the message another opener gets); the
 * returned function releases it. DatabaseInUseError when a live process holds it.
 */
export function claimEmbeddedDatabase(dataDir: string, command: string): () => void {
  const path = `${dataDir}.lock`;
  // A fresh clone has no DATA_DIR yet: the lock is the first thing written into it.
  mkdirSync(dirname(path), { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, JSON.stringify({ pid: process.pid, command }));
      closeSync(fd);
      const release = () => {
        if (readOwner(path)?.pid === process.pid) unlinkSync(path);
        process.off('exit', release);
      };
      process.on('exit', release);
      return release;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = readOwner(path);
      if (owner && owner.pid !== process.pid && alive(owner.pid)) {
        throw new DatabaseInUseError(
          `The embedded database at ${dataDir} is in use by ${owner.command} (pid ${owner.pid}). ` +
            'Stop it first, or use PostgreSQL (DATABASE_URL), where the CLI and servers run side by side.',
        );
      }
      // Left by a process that is gone (or unreadable): take it over.
      unlinkSync(path);
    }
  }
  throw new DatabaseInUseError(`could not take the lock of the embedded database at ${dataDir}`);
}
