/**
 * What a GraphQL selection of Metric needs from SQL: the columns of the
 * metric row and the parts (src/metric/parts.ts) to read in the same
 * statement. A list page of 20 metrics with the list envelope's 14 fields
 * reads 14 columns instead of 48.
 *
 * A Metric field exposing the model field of the same name needs that
 * column; the others are listed here. A field that is neither (a new one,
 * forgotten here) makes the read take every column, so forgetting costs
 * speed, never correctness; test/graphql/metric-selection.test.ts asks every
 * field alone and compares it with the whole metric.
 */
import {
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLResolveInfo,
  Kind,
  type SelectionSetNode,
} from 'graphql';
import { BUSINESS_DEFINITION_COLUMNS } from '../metric/business-definition.js';
import { isMetricField, type MetricField } from '../metric/columns.js';
import type { MetricReadPlan, PartName } from '../metric/loaders.js';

const FIELD_COLUMNS: Partial<Record<string, MetricField[]>> = {
  status: ['lifecycleStatus'],
  canonicalUrl: [],
  fiscalCalendarStartMonth: [],
  discussionSummary: [],
  dependents: [],
  lineage: [],
  executionContext: ['resolvedParameters', 'renderedSqlExamples', 'latestClosedPeriod'],
  governanceFacts: [
    'ownerTeam',
    'approverRole',
    'approverUser',
    'approvedAt',
    'lifecycleStatus',
    'definitionVersion',
    'effectiveFrom',
    'effectiveTo',
    'nextReviewDate',
  ],
  businessDefinition: [...BUSINESS_DEFINITION_COLUMNS],
  businessDefinitionStatus: [...BUSINESS_DEFINITION_COLUMNS],
};

/** The Metric fields that read a part; their columns are the part's, not the metric's. */
export const FIELD_PARTS: Partial<Record<string, PartName>> = {
  relationships: 'relations',
  approvals: 'relations',
  versionHistory: 'relations',
  requiresDisambiguation: 'disambiguation',
  currentApprovedVersion: 'stats',
  lastValidatedAt: 'stats',
  challengesCount: 'stats',
  openChallengesCount: 'stats',
  discussionThreadCount: 'discussion',
  discussionMessageCount: 'discussion',
  discourseSummary: 'discussion',
  agentContextNotes: 'agentContextNotes',
  trust: 'trust',
  revision: 'revision',
  inputs: 'inputs',
  dependentsCount: 'dependentsCount',
};

type Fragments = GraphQLResolveInfo['fragments'];

/** The fields of `sets` (through fragments), flattened. */
function fieldsOf(fragments: Fragments, sets: readonly (SelectionSetNode | undefined)[]): FieldNode[] {
  const fields: FieldNode[] = [];
  const visit = (set: SelectionSetNode | undefined): void => {
    for (const selection of set?.selections ?? []) {
      if (selection.kind === Kind.FIELD) fields.push(selection);
      else if (selection.kind === Kind.INLINE_FRAGMENT) visit(selection.selectionSet);
      else visit(fragments[selection.name.value]?.selectionSet);
    }
  };
  for (const set of sets) visit(set);
  return fields;
}

/**
 * Plans kept by the field's node and the path. A node belongs to one parsed
 * document, and the documents are parsed once and kept (the REST operations
 * at load, /graphql's by yoga's parse cache), so a selection is planned once,
 * not on every request. Only a field with a single node is kept: merged
 * nodes of one response key may differ per operation of a document.
 */
const kept = new WeakMap<FieldNode, Map<string, MetricReadPlan>>();

/**
 * The plan for the Metric selection of the field being resolved or, with
 * `path`, of its subfields by that path of field names (`['items']` for the
 * metrics of a page).
 */
export function planMetricRead(info: GraphQLResolveInfo, path: readonly string[] = []): MetricReadPlan {
  const node = info.fieldNodes.length === 1 ? info.fieldNodes[0] : undefined;
  return node ? keptPlan(node, info.fragments, path.join('.')) : plan(info.fieldNodes, info.fragments, path);
}

function keptPlan(node: FieldNode, fragments: Fragments, path: string): MetricReadPlan {
  let byPath = kept.get(node);
  if (!byPath) {
    byPath = new Map();
    kept.set(node, byPath);
  }
  let known = byPath.get(path);
  if (!known) {
    known = plan([node], fragments, path ? path.split('.') : []);
    byPath.set(path, known);
  }
  return known;
}

function plan(fieldNodes: readonly FieldNode[], fragments: Fragments, path: readonly string[]): MetricReadPlan {
  let nodes = fieldNodes;
  for (const name of path) {
    nodes = fieldsOf(
      fragments,
      nodes.map((node) => node.selectionSet),
    ).filter((node) => node.name.value === name);
  }
  // id: every loader and part is keyed by it; orgId: cheap, and scoping reads use it.
  let fields: Set<MetricField> | null = new Set<MetricField>(['id', 'orgId']);
  const parts = new Set<PartName>();
  for (const node of fieldsOf(
    fragments,
    nodes.map((n) => n.selectionSet),
  )) {
    const name = node.name.value;
    const part = FIELD_PARTS[name];
    const columns = FIELD_COLUMNS[name] ?? (isMetricField(name) ? [name] : undefined);
    if (part) parts.add(part);
    else if (name === '__typename') continue;
    else if (!columns) fields = null;
    else for (const column of columns) fields?.add(column);
  }
  return { fields, parts };
}

/**
 * The plan of the root field `name` of a document's query (a REST route's
 * fixed operation), before it runs: the very plan (the same object) the
 * field's resolver gets from {@link planMetricRead}, as both are kept by the
 * field's node.
 */
export function planDocumentField(document: DocumentNode, name: string): MetricReadPlan {
  const fragments: Record<string, FragmentDefinitionNode> = {};
  let operation: SelectionSetNode | undefined;
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments[definition.name.value] = definition;
    else if (definition.kind === Kind.OPERATION_DEFINITION) operation ??= definition.selectionSet;
  }
  const nodes = fieldsOf(fragments, [operation]).filter((node) => node.name.value === name);
  const node = nodes.length === 1 ? nodes[0] : undefined;
  if (!node) throw new Error(`the document must select ${name} once`);
  return keptPlan(node, fragments, '');
}
