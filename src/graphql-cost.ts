/**
 * What one GraphQL operation spends of the caller's per-minute budget, and
 * the rule that an operation asks for at most one discussion summary.
 *
 * The cost is computed from the parsed and validated document with its
 * variables, before execution, so that a key cannot read more per minute
 * through /graphql than through REST (one unit per request of at most 100
 * metrics):
 *
 * - every root field (each alias counts; fields merged under one response
 *   name count once) costs one unit per started 100 metrics it can return:
 *   `metrics(pageSize)` and `metricsConnection(first | last)` by their
 *   effective page size (at most 100, so 1), `metric(id)` 1, any other root
 *   field 1;
 * - introspection root fields (`__schema`, `__type`, `__typename`) cost
 *   nothing of their own;
 * - below the root fields, for each parent metric the field can be asked of
 *   (a page's or connection's page size, the ids of `metricsByIds`, the
 *   nodes of `dependents` above it; one for any other field): `lineage`
 *   costs one unit per parent (a walk, as one REST lineage request), and
 *   `dependents(first | last)` one unit per started 100 metrics it can
 *   return for all its parents together (20 aliases of a lineage cost 20
 *   more; a list page of 100 with dependents(first: 100) 100 more);
 * - an operation costs at least 1.
 *
 * Root fields dropped by `@skip`/`@include` cost nothing.
 */
import {
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  GraphQLError,
  type GraphQLField,
  GraphQLIncludeDirective,
  type GraphQLObjectType,
  type GraphQLSchema,
  GraphQLSkipDirective,
  getArgumentValues,
  getDirectiveValues,
  getNamedType,
  getOperationAST,
  getVariableValues,
  isObjectType,
  Kind,
  type SelectionSetNode,
  type ValidationRule,
} from 'graphql';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from './schema/metric-query.js';

/** Metrics one unit of budget reads: one REST list page. */
export const METRICS_PER_UNIT = 100;

const INTROSPECTION_FIELDS = new Set(['__schema', '__type', '__typename']);

function pageSize(value: unknown): number {
  const size = typeof value === 'number' && Number.isFinite(value) ? value : DEFAULT_PAGE_SIZE;
  return Math.min(MAX_PAGE_SIZE, Math.max(1, size));
}

function rootFieldCost(name: string, args: Record<string, unknown>): number {
  if (INTROSPECTION_FIELDS.has(name)) return 0;
  let metrics = 1;
  if (name === 'metrics') metrics = pageSize(args.pageSize);
  else if (name === 'metricsConnection') metrics = pageSize(args.first ?? args.last);
  return Math.max(1, Math.ceil(metrics / METRICS_PER_UNIT));
}

/** Metrics a root field returns at most: the parents of the fields below it. */
function rootParents(name: string, args: Record<string, unknown>): number {
  if (name === 'metrics') return pageSize(args.pageSize);
  if (name === 'metricsConnection') return pageSize(args.first ?? args.last);
  if (name === 'metricsByIds') return Array.isArray(args.ids) ? Math.max(1, args.ids.length) : 1;
  return 1;
}

type Variables = Record<string, unknown>;

/** The field's arguments, or none when they do not coerce (execution then fails the field, reading nothing). */
function argumentsOf(definition: GraphQLField<unknown, unknown> | undefined, node: FieldNode, variables: Variables) {
  try {
    return definition ? getArgumentValues(definition, node, variables) : {};
  } catch {
    return {};
  }
}

/**
 * Units the fields below a root field cost (see the module comment) for
 * `parents` metrics above them. Each fragment is costed once per number of
 * parents: a document spreading fragments into each other costs its size to
 * cost, not the size of its expansion.
 */
function nestedCost(
  schema: GraphQLSchema,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  variables: Variables,
) {
  const memo = new Map<string, number>();
  const typeNamed = (name: string | undefined, fallback: GraphQLObjectType) => {
    const type = name === undefined ? undefined : schema.getType(name);
    return isObjectType(type) ? type : fallback;
  };
  const walk = (set: SelectionSetNode | undefined, type: GraphQLObjectType, parents: number): number => {
    let cost = 0;
    for (const selection of set?.selections ?? []) {
      if (!included(selection, variables)) continue;
      if (selection.kind === Kind.INLINE_FRAGMENT) {
        cost += walk(selection.selectionSet, typeNamed(selection.typeCondition?.name.value, type), parents);
        continue;
      }
      if (selection.kind === Kind.FRAGMENT_SPREAD) {
        const fragment = fragments.get(selection.name.value);
        if (!fragment) continue;
        const key = `${fragment.name.value}|${parents}`;
        let known = memo.get(key);
        if (known === undefined) {
          // A cycle of fragments is refused by validation before this runs; the entry stops one anyway.
          memo.set(key, 0);
          known = walk(fragment.selectionSet, typeNamed(fragment.typeCondition.name.value, type), parents);
          memo.set(key, known);
        }
        cost += known;
        continue;
      }
      const definition = type.getFields()[selection.name.value];
      const below = definition ? getNamedType(definition.type) : undefined;
      let count = parents;
      if (selection.name.value === 'lineage') cost += parents;
      if (selection.name.value === 'dependents') {
        const args = argumentsOf(definition, selection, variables);
        count = parents * pageSize(args.first ?? args.last);
        cost += Math.ceil(count / METRICS_PER_UNIT);
      }
      if (isObjectType(below)) cost += walk(selection.selectionSet, below, count);
    }
    return cost;
  };
  return walk;
}

function included(node: FieldNode | { directives?: FieldNode['directives'] }, variables: Variables): boolean {
  if (getDirectiveValues(GraphQLSkipDirective, node, variables)?.if === true) return false;
  return getDirectiveValues(GraphQLIncludeDirective, node, variables)?.if !== false;
}

/** Root fields by response name, with fragments expanded and @skip/@include applied. */
function rootFields(
  document: DocumentNode,
  selectionSet: SelectionSetNode,
  variables: Variables,
  into = new Map<string, FieldNode[]>(),
  visited = new Set<string>(),
): Map<string, FieldNode[]> {
  for (const selection of selectionSet.selections) {
    if (!included(selection, variables)) continue;
    if (selection.kind === Kind.FIELD) {
      const responseName = selection.alias?.value ?? selection.name.value;
      into.set(responseName, [...(into.get(responseName) ?? []), selection]);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      rootFields(document, selection.selectionSet, variables, into, visited);
    } else {
      const name = selection.name.value;
      if (visited.has(name)) continue;
      visited.add(name);
      const fragment = document.definitions.find(
        (definition) => definition.kind === Kind.FRAGMENT_DEFINITION && definition.name.value === name,
      );
      if (fragment?.kind === Kind.FRAGMENT_DEFINITION) {
        rootFields(document, fragment.selectionSet, variables, into, visited);
      }
    }
  }
  return into;
}

/**
 * Units of budget the operation spends (see the module comment). A document
 * that cannot execute (no such operation, variables that do not coerce) costs
 * 1: execution answers its errors without reading anything.
 */
export function operationCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  rawVariables: Variables | null | undefined,
): number {
  const operation = getOperationAST(document, operationName);
  const rootType = operation && schema.getRootType(operation.operation);
  if (!operation || !rootType) return 1;
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], rawVariables ?? {});
  if (coerced.errors) return 1;
  const variables = coerced.coerced;
  const fields = rootType.getFields();
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const below = nestedCost(schema, fragments, variables);
  let cost = 0;
  for (const [, nodes] of rootFields(document, operation.selectionSet, variables)) {
    let fieldCost = 0;
    let nested = 0;
    for (const node of nodes) {
      const definition = fields[node.name.value];
      const args = argumentsOf(definition, node, variables);
      fieldCost = Math.max(fieldCost, rootFieldCost(node.name.value, args));
      const type = definition ? getNamedType(definition.type) : undefined;
      if (isObjectType(type)) nested += below(node.selectionSet, type, rootParents(node.name.value, args));
    }
    cost += fieldCost + nested;
  }
  return Math.max(1, cost);
}

/** The field that can generate (and bill) a summary. */
const SUMMARY_FIELD = 'discussionSummary';

/**
 * An operation may ask for `discussionSummary` at most once (counted by
 * response path, fragments expanded, whatever `@skip`/`@include` would
 * drop): each can start a billable generation. On lists the field is refused
 * when it resolves (src/schema/metric.ts).
 */
export const OneDiscussionSummaryPerOperation: ValidationRule = (context) => ({
  OperationDefinition(operation) {
    const paths = new Map<string, FieldNode>();
    // A fragment spread again at the same response path adds no path: walked once per path.
    const walked = new Set<string>();
    const walk = (selectionSet: SelectionSetNode, prefix: string, fragments: Set<string>) => {
      for (const selection of selectionSet.selections) {
        if (paths.size > 1) return;
        if (selection.kind === Kind.FIELD) {
          const path = `${prefix}.${selection.alias?.value ?? selection.name.value}`;
          if (selection.name.value === SUMMARY_FIELD) paths.set(path, selection);
          if (selection.selectionSet) walk(selection.selectionSet, path, fragments);
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          walk(selection.selectionSet, prefix, fragments);
        } else {
          const name = selection.name.value;
          const fragment = context.getFragment(name);
          // Cycles are reported by the standard NoFragmentCycles rule.
          if (!fragment || fragments.has(name) || walked.has(`${prefix}|${name}`)) continue;
          walked.add(`${prefix}|${name}`);
          walk(fragment.selectionSet, prefix, new Set([...fragments, name]));
        }
      }
    };
    walk(operation.selectionSet, '', new Set());
    if (paths.size > 1) {
      context.reportError(
        new GraphQLError(
          'At most one discussionSummary per operation: each can generate and bill a summary; ' +
            'ask for one metric summary per request.',
          { nodes: [...paths.values()] },
        ),
      );
    }
  },
});
