/**
 * Every bound on what the write routes accept, in one place (and in
 * docs/registry-document.md, "Limits"). A write's text comes from a caller
 * the service does not trust: the structure of a body is counted while it is
 * read, before anything is built from it (src/registry/text-scan.ts), so that
 * no document can cost the server more memory or time than these allow; the
 * text that would be stored is checked field by field
 * (src/registry/stored-text.ts); dates are those PostgreSQL and a reader can
 * take.
 */

/** The structure a body may have, counted as it is read. */
export interface StructureLimits {
  /** collections (arrays, objects, YAML sequences and mappings) inside one another */
  depth: number;
  /** entries of one collection */
  entries: number;
  /** values, collections and member names of the whole body (in YAML, sequence entries and flow commas too) */
  nodes: number;
}

/** Deeper than any registry document needs (a metric's own JSON fields included). */
export const MAX_DEPTH = 64;
/** Ten times a large registry; the entries of any one collection of a document. */
export const MAX_DOCUMENT_METRICS = 20_000;
/**
 * Reading YAML (its syntax tree, then its nodes) takes several times the
 * memory of reading JSON: a YAML document of 250,000 values peaks near what
 * a JSON one of 1,000,000 does, about 100 MB. 10,000 metrics of 35 fields
 * each fit in JSON.
 */
export const MAX_JSON_DOCUMENT_NODES = 1_000_000;
export const MAX_YAML_DOCUMENT_NODES = 250_000;

export const DOCUMENT_LIMITS = {
  json: { depth: MAX_DEPTH, entries: MAX_DOCUMENT_METRICS, nodes: MAX_JSON_DOCUMENT_NODES },
  yaml: { depth: MAX_DEPTH, entries: MAX_DOCUMENT_METRICS, nodes: MAX_YAML_DOCUMENT_NODES },
} as const satisfies Record<string, StructureLimits>;

/**
 * A metric's inputs (`inputs: [key, ...]`): a derived metric reads a few
 * others; a hundred is past any real formula and keeps one metric's edges,
 * and the cycle search over a document, bounded.
 */
export const MAX_METRIC_INPUTS = 100;
/** Cycles of inputs a refused document is told of: each names its metrics, and one is enough to start fixing. */
export const MAX_INPUT_CYCLES_REPORTED = 20;
/** Keys a cycle's problem names at most; a longer cycle is shortened in the middle. */
export const MAX_CYCLE_KEYS_SHOWN = 20;

export const MAX_VALIDATION_RESULTS = 1000;
export const MAX_VALIDATION_METRIC_KEY = 128;
export const MAX_VALIDATION_DETAILS = 10_000;
export const MAX_VALIDATION_SOURCE = 200;
/** Clocks differ a little; evidence from further ahead would keep a verdict fresh for as long as it lies. */
export const MAX_VALIDATION_FUTURE_MS = 5 * 60 * 1000;

/** `{ "results": [ ... ] }` of objects of five members: one batch at most, counted before it is parsed. */
export const VALIDATION_LIMITS: StructureLimits = {
  depth: 3,
  entries: MAX_VALIDATION_RESULTS,
  nodes: 3 + 11 * MAX_VALIDATION_RESULTS,
};

/**
 * POST /api/validations/dbt: `{ "run_results": ..., "manifest": ... }`, dbt's
 * two artifacts. A manifest.json holds every node of a project (compiled
 * SQL included): a few MiB for most projects, tens for the largest. 32 MiB
 * bounds one request and what reading it costs a worker thread; a project
 * past it records its evidence with the CLI (`validation:import`), which
 * reads the files in its own process.
 */
export const DBT_EVIDENCE_BODY_LIMIT = 32 * 1024 * 1024;
/** The structure of that body, counted as it is read (a manifest of ~50,000 nodes fits). */
export const DBT_EVIDENCE_LIMITS: StructureLimits = { depth: MAX_DEPTH, entries: 200_000, nodes: 4_000_000 };

/**
 * Characters (UTF-16 code units) of one text of a registry document: names,
 * labels, keys and list entries; long prose; SQL and what execution renders.
 */
export const MAX_NAME_CHARACTERS = 256;
export const MAX_PROSE_CHARACTERS = 20_000;
export const MAX_SQL_CHARACTERS = 100_000;

/**
 * The bound of each text of a metric by its field (`versions.change_summary`
 * for a member of an entry of a list), every text inside a free-form field
 * included; a field not named here holds names (MAX_NAME_CHARACTERS).
 */
export const METRIC_TEXT_LIMITS: Readonly<Record<string, number>> = {
  description: MAX_PROSE_CHARACTERS,
  business_definition: MAX_PROSE_CHARACTERS,
  'versions.change_summary': MAX_PROSE_CHARACTERS,
  'approvals.comment': MAX_PROSE_CHARACTERS,
  filters: MAX_PROSE_CHARACTERS,
  dimensions: MAX_PROSE_CHARACTERS,
  source_refs: MAX_PROSE_CHARACTERS,
  expression: MAX_PROSE_CHARACTERS,
  dependencies: MAX_PROSE_CHARACTERS,
  time_semantics: MAX_PROSE_CHARACTERS,
  deprecated_framing_rules: MAX_PROSE_CHARACTERS,
  dimension_map: MAX_PROSE_CHARACTERS,
  column_aliases: MAX_PROSE_CHARACTERS,
  consumer_contexts: MAX_PROSE_CHARACTERS,
  policy_examples: MAX_PROSE_CHARACTERS,
  approval_state: MAX_PROSE_CHARACTERS,
  sql_expression: MAX_SQL_CHARACTERS,
  execution_context: MAX_SQL_CHARACTERS,
};

/** Years a timestamp may name: PostgreSQL has no year 0, and no metric's history is older or that far ahead. */
export const EARLIEST_YEAR = 1900;
export const LATEST_YEAR = 2200;

const MiB = 1024 * 1024;
/** PUT /api/registry: a document of 10,000 metrics is a few MiB; this leaves room and still bounds one request. */
export const REGISTRY_BODY_LIMIT = 16 * MiB;
/**
 * POST /api/validations: the largest valid batch, each of its results with
 * every text at its bound in characters of three UTF-8 bytes, with room for
 * member names, the timestamp and the status (about 30 MiB).
 */
export const VALIDATIONS_BODY_LIMIT =
  MAX_VALIDATION_RESULTS * (3 * (MAX_VALIDATION_METRIC_KEY + MAX_VALIDATION_DETAILS + MAX_VALIDATION_SOURCE) + 256) +
  1024;
