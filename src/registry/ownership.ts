/**
 * Which source's value each field of a metric takes (docs/registry.md#sources),
 * after the field managers of Kubernetes' server-side apply: a source owns the
 * fields it wrote (`metric.field_sources`); a source that does not set a field
 * leaves it to its owner; a source that sets a field another source owns, to
 * another value, is in conflict with it, and takes it over only when forced.
 * A field nobody owns (a schema default, or written before sources existed)
 * belongs, for this, to the source that created the metric.
 */

import { RegistryError, type RegistryProblem } from './registry-error.js';

export interface FieldConflict {
  field: string;
  /** the source that owns the field */
  owner: string;
}

/** A metric's stored `field_sources`, its members that are not names dropped. */
export function ownersOf(value: unknown): Record<string, string> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return {};
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).filter(
      (entry): entry is [string, string] => typeof entry[1] === 'string',
    ),
  );
}

/** The owners of a metric a source creates: itself, for each field it sets. */
export function ownersOfNew(source: string, fieldsSet: Iterable<string>): Record<string, string> {
  return Object.fromEntries([...fieldsSet].map((field) => [field, source]));
}

export interface FieldDecision {
  /** fields that keep their stored value (another source's, or a conflict not forced) */
  keep: Set<string>;
  conflicts: FieldConflict[];
  /** field_sources after the apply */
  owners: Record<string, string>;
}

export interface DecideInput {
  /** the document's fields, in its order */
  fields: readonly string[];
  source: string;
  /** the source that created the metric */
  creator: string;
  fieldsSet: ReadonlySet<string>;
  owners: Record<string, string>;
  /** fields whose desired value differs from the stored one */
  differs: ReadonlySet<string>;
  force: boolean;
}

/** What an apply of `source` does with each field of a stored metric. */
export function decideFields(input: DecideInput): FieldDecision {
  const { source, fieldsSet, differs } = input;
  const owners = { ...input.owners };
  const keep = new Set<string>();
  const conflicts: FieldConflict[] = [];
  for (const field of input.fields) {
    const owner = input.owners[field];
    const other = owner !== undefined && owner !== source;
    if (fieldsSet.has(field)) {
      if (!other) owners[field] = source;
      else if (!differs.has(field)) keep.add(field);
      else {
        conflicts.push({ field, owner });
        if (input.force) owners[field] = source;
        else keep.add(field);
      }
    } else if (other || (owner === undefined && input.creator !== source)) {
      keep.add(field);
    } else {
      // The source wrote it before and no longer does: back to the document's default, owned by nobody.
      delete owners[field];
    }
  }
  return { keep, conflicts, owners };
}

/** A plan's conflicts, each at the place of its field in the document. */
export interface PlacedConflict {
  key: string;
  /** the metric's place in the document (in its part, for an upload's) */
  index: number;
  /** the part of an upload the metric is in; absent for a document */
  part?: number;
  conflict: FieldConflict;
}

/**
 * An apply refused for its conflicts: each field the document sets that
 * another source owns, at its place. `force` says how the caller takes the
 * fields over (`--force-conflicts`, `force_conflicts=true`).
 */
export class ConflictsRefused extends RegistryError {
  constructor(conflicts: readonly PlacedConflict[], force: string) {
    super(
      conflicts.map(
        ({ index, part, conflict }): RegistryProblem => ({
          path: [...(part === undefined ? [] : ['parts', part]), 'metrics', index, conflict.field],
          message: `conflict: source "${conflict.owner}" owns this field and set another value (${force} takes it over)`,
        }),
      ),
    );
  }
}
