/**
 * A registry document that cannot be applied: every problem with the path of
 * the value at fault (`metrics[3].lifecycle_status`), rendered by the caller
 * with the YAML line and column when it has them (src/registry/text.ts).
 */
import { formatIssuePath } from '../fixtures/schema.js';

export interface RegistryProblem {
  path: readonly PropertyKey[];
  message: string;
}

export class RegistryError extends Error {
  override readonly name = 'RegistryError';

  constructor(readonly problems: readonly RegistryProblem[]) {
    super(problems.map(({ path, message }) => `${formatIssuePath(path) || '(document)'}: ${message}`).join('\n'));
  }

  /** Each problem as one line, its place rendered by `locate` (a YAML line and column, or the path). */
  lines(locate: (path: readonly PropertyKey[]) => string = formatIssuePath): string[] {
    return this.problems.map(({ path, message }) => `${locate(path) || '(document)'}: ${message}`);
  }
}
