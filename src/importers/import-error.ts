/**
 * A refused import: every problem found, each naming the place in the
 * source file (a JSON path such as `metrics[3].config.meta.governance.scope`)
 * and, in its message, the metric it belongs to. Nothing is applied.
 */

export interface ImportProblem {
  /** JSON path in the source file; "" for the file as a whole */
  path: string;
  message: string;
}

/** Past this many lines the rest is counted, not listed. */
const MAX_PROBLEM_LINES = 20;

export class ImportError extends Error {
  override readonly name = 'ImportError';
  readonly problems: readonly ImportProblem[];

  constructor(problems: readonly ImportProblem[]) {
    const lines = problems.map(({ path, message }) => `${path || '(file)'}: ${message}`);
    const shown = lines.slice(0, MAX_PROBLEM_LINES);
    if (lines.length > shown.length) shown.push(`... and ${lines.length - shown.length} more problems`);
    super(shown.join('\n'));
    this.problems = problems;
  }
}

/** Paths are rendered as the fixture format renders them: `metrics[3].type_params.measure`. */
export { formatIssuePath as formatPath } from '../fixtures/schema.js';
