/**
 * Two versions of a metric compared field by field: a field of one line is
 * shown as its two values, a field of several lines (a change summary, the
 * version's approvals) as a line diff. The line diff is the longest common
 * subsequence of the lines, bounded: past MAX_DIFF_CELLS cells of its
 * table, every line of one side is shown removed and every line of the
 * other added, so no pair of texts costs more than that.
 */

export type DiffLine = { kind: 'same' | 'removed' | 'added'; text: string };

/** Cells of the LCS table at most (a change summary is at most 20,000 characters, so at most that many lines). */
export const MAX_DIFF_CELLS = 1_000_000;

export function lineDiff(before: string, after: string): DiffLine[] {
  const a = before === '' ? [] : before.split(/\r?\n/);
  const b = after === '' ? [] : after.split(/\r?\n/);
  if ((a.length + 1) * (b.length + 1) > MAX_DIFF_CELLS) {
    return [
      ...a.map((text): DiffLine => ({ kind: 'removed', text })),
      ...b.map((text): DiffLine => ({ kind: 'added', text })),
    ];
  }
  const width = b.length + 1;
  // lengths[i * width + j]: the longest common subsequence of a[i..] and b[j..]
  const lengths = new Uint32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i -= 1) {
    for (let j = b.length - 1; j >= 0; j -= 1) {
      lengths[i * width + j] =
        a[i] === b[j]
          ? (lengths[(i + 1) * width + j + 1] as number) + 1
          : Math.max(lengths[(i + 1) * width + j] as number, lengths[i * width + j + 1] as number);
    }
  }
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      out.push({ kind: 'same', text: a[i] as string });
      i += 1;
      j += 1;
    } else if ((lengths[(i + 1) * width + j] as number) >= (lengths[i * width + j + 1] as number)) {
      out.push({ kind: 'removed', text: a[i] as string });
      i += 1;
    } else {
      out.push({ kind: 'added', text: b[j] as string });
      j += 1;
    }
  }
  for (; i < a.length; i += 1) out.push({ kind: 'removed', text: a[i] as string });
  for (; j < b.length; j += 1) out.push({ kind: 'added', text: b[j] as string });
  return out;
}

export interface FieldDiff {
  field: string;
  before: string;
  after: string;
  changed: boolean;
  /** for a field of several lines on either side: its line diff */
  lines: DiffLine[] | null;
}

/** The fields of two versions (each field's text, in the order given), compared. */
export function fieldDiff(fields: readonly string[], before: Record<string, string>, after: Record<string, string>) {
  return fields.map((field): FieldDiff => {
    const from = before[field] ?? '';
    const to = after[field] ?? '';
    const multiline = from.includes('\n') || to.includes('\n');
    return { field, before: from, after: to, changed: from !== to, lines: multiline ? lineDiff(from, to) : null };
  });
}
