/**
 * From a file's text to a validated registry document, whatever the file:
 * a registry document (YAML or JSON), a dbt semantic manifest, or an Open
 * Semantic Interchange document. Foreign formats go through their importer
 * (src/importers/, pure translations) and then through the same validation
 * as a hand-written document, the text it would store checked first. The
 * CLI reads the user's own file through here in its process; the HTTP route
 * reads a caller's through the same function in a worker thread
 * (src/registry/read-off-thread.ts).
 */
import { formatIssuePath } from '../fixtures/schema.js';
import type { LifecycleStatus } from '../generated/prisma/enums.js';
import { dbtSourceName, importDbtManifest } from '../importers/dbt.js';
import { ImportError } from '../importers/import-error.js';
import { importOsiDocument, osiSourceName } from '../importers/osi.js';
import { DEFAULT_OWNER_TEAM, type RegistryDocumentInput } from '../importers/registry-document-input.js';
import { parseRegistryDocument, type RegistryDocument, sourceName } from './document.js';
import { RegistryError } from './registry-error.js';
import { storedTextProblems } from './stored-text.js';
import { type DocumentFormat, describeTextProblem, parseDocumentText } from './text.js';

export const SOURCE_FORMATS = ['registry', 'dbt', 'osi'] as const;
export type SourceFormat = (typeof SOURCE_FORMATS)[number];

export interface SourceOptions {
  format: SourceFormat;
  /** how the text is written (JSON or YAML) */
  syntax: DocumentFormat;
  /** the organization a foreign file is imported for (the document's `organization`) */
  organization: string;
  /** the lifecycle of imported metrics whose governance sets none */
  defaultLifecycle?: LifecycleStatus;
  /** the source the apply is made as (--source, source=); default: the document's, or the importer's */
  source?: string;
}

export type ReadSource =
  | {
      ok: true;
      document: RegistryDocument;
      /** the document as read or imported, before validation filled its defaults (what registry:import prints) */
      input: unknown;
      /** where a path of the document is in the file (YAML line and column for a registry document) */
      locate: (path: readonly PropertyKey[]) => string;
    }
  | { ok: false; lines: string[] };

/** Problems found past an import are in the document it made, not in the file. */
export const locateImported = (path: readonly PropertyKey[]): string =>
  `${formatIssuePath(path) || '(document)'} of the document imported from the file`;

/**
 * Fields an importer writes without the file saying them: an empty
 * description and the default owner team. The import does not set them
 * (docs/registry.md#sources), so that it leaves a steward's value alone.
 */
function unsaid(metric: Record<string, unknown>): string[] {
  const fields: string[] = [];
  if (metric.description === '') fields.push('description');
  if (metric.owner_team === DEFAULT_OWNER_TEAM) fields.push('owner_team');
  if (metric.lifecycle_status === undefined) fields.push('lifecycle_status');
  return fields;
}

/**
 * The imported document, with the request's default lifecycle filled in
 * where the file set none, and the fields each metric leaves unset.
 */
function withImportDefaults(imported: RegistryDocumentInput, lifecycle: LifecycleStatus | undefined) {
  const unset = imported.metrics.map((metric) => unsaid(metric));
  const metrics = imported.metrics.map((metric) =>
    lifecycle !== undefined && metric.lifecycle_status === undefined
      ? { ...metric, lifecycle_status: lifecycle }
      : metric,
  );
  return { input: { ...imported, metrics }, unset };
}

export function readRegistrySource(text: string, options: SourceOptions): ReadSource {
  const parsedText = parseDocumentText(text, options.syntax);
  if (!parsedText.ok) return { ok: false, lines: parsedText.problems.map(describeTextProblem) };
  if (options.source !== undefined) {
    const named = sourceName.safeParse(options.source);
    if (!named.success) return { ok: false, lines: [`source: ${named.error.issues[0]?.message ?? 'invalid'}`] };
  }
  let input: unknown = parsedText.value;
  let locate = parsedText.locate;
  let unset: string[][] = [];
  let importedSource: string | undefined;
  if (options.format !== 'registry') {
    const importOptions = { organization: options.organization };
    try {
      const imported =
        options.format === 'dbt'
          ? importDbtManifest(parsedText.value, importOptions)
          : importOsiDocument(parsedText.value, importOptions);
      importedSource = options.format === 'dbt' ? dbtSourceName(parsedText.value) : osiSourceName(parsedText.value);
      ({ input, unset } = withImportDefaults(imported, options.defaultLifecycle));
    } catch (error) {
      if (error instanceof ImportError) {
        return { ok: false, lines: error.problems.map(({ path, message }) => `${path || '(file)'}: ${message}`) };
      }
      throw error;
    }
    locate = locateImported;
  }
  const unstorable = storedTextProblems(input);
  if (unstorable.length > 0) return { ok: false, lines: new RegistryError(unstorable).lines(locate) };
  const parsed = parseRegistryDocument(input);
  if (!parsed.ok) return { ok: false, lines: new RegistryError(parsed.problems).lines(locate) };
  const { document } = parsed;
  const source = options.source ?? importedSource ?? document.source;
  const fieldsSet = document.fieldsSet.map((fields, m) => fields.filter((field) => !unset[m]?.includes(field)));
  return { ok: true, document: { ...document, source, fieldsSet }, input, locate };
}
