/**
 * Metric reads take only the columns their selection needs
 * (src/schema/metric-selection.ts). Every field of Metric, asked alone, must
 * answer exactly what it answers when the whole metric is asked for: on
 * `metric(id)` and on the items of a page. A field whose columns the
 * selection plan forgot would come back null or fail here.
 */
import {
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLOutputType,
  getNamedType,
  isLeafType,
  isObjectType,
} from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schema } from '../../src/schema/index.js';
import { FIELD_PARTS } from '../../src/schema/metric-selection.js';
import { demoFixture, startTestApp, type TestApp } from '../helpers/app.js';

const AGENT_KEY = 'cl_e2c054bba210a48947b4e81d7a176fccf426940b';
/** generates and bills; its needs (the id) are covered by the summary suites */
const SKIPPED = new Set(['discussionSummary']);
/** walks the lineage with a statement of its own, refused on lists (test/graphql/lineage.test.ts covers it) */
const SINGLE_METRIC_ONLY = new Set(['lineage']);

/** `name` or `name { ...leaves }`, two levels of objects deep. */
function selectionOf(field: GraphQLField<unknown, unknown>, depth = 0): string {
  const type = getNamedType(field.type as GraphQLOutputType);
  if (isLeafType(type)) return field.name;
  if (!isObjectType(type) || depth > 1) return '';
  const inner = Object.values(type.getFields())
    .map((f) => selectionOf(f, depth + 1))
    .filter(Boolean);
  return `${field.name} { ${inner.join(' ')} }`;
}

const metricType = schema.getType('Metric') as GraphQLObjectType;
const fields = Object.values(metricType.getFields())
  .filter((field) => !SKIPPED.has(field.name))
  .map((field) => ({ name: field.name, selection: selectionOf(field) }));

let t: TestApp;
let richId: string;
beforeAll(async () => {
  // The demo with the agent key's budget raised (this suite sends over a hundred requests) and
  // every optional member of every metric set to a value of its own, so a wrong column shows.
  const fixture = JSON.parse(JSON.stringify(demoFixture));
  for (const org of fixture.organizations) {
    for (const key of org.api_keys) if (key.secret === AGENT_KEY) key.rate_limit_per_minute = 100_000;
    org.metrics.forEach((metric: Record<string, unknown>, i: number) => {
      const day = `2026-0${(i % 9) + 1}-1${i % 10}`;
      Object.assign(metric, {
        owner_display_name: `Owner ${i}`,
        expression: { op: 'sum', i },
        dependencies: [`dep-${i}`],
        time_semantics: { timezone: 'UTC', i },
        deprecated_framing_rules: [{ rule: `r${i}` }],
        dimension_map: { region: `region_${i}` },
        column_aliases: { amount: `amount_${i}` },
        consumer_contexts: { bi: `bi-${i}` },
        policy_examples: [{ example: i }],
        approval_state: { state: `s${i}` },
        business_definition: {
          included: `in ${i}`,
          excluded: `out ${i}`,
          time_window: `window ${i}`,
          caveats: `caveat ${i}`,
          legacy_description: `legacy ${i}`,
        },
        execution_context: {
          resolved_parameters: { p: i },
          rendered_sql_examples: [`SELECT ${i}`],
          latest_closed_period: { period: day },
        },
        governance: {
          approver_role: `role ${i}`,
          approver_user: `user ${i}`,
          approved_at: day,
          effective_from: day,
          effective_to: '2027-01-01',
          next_review_date: '2027-06-01',
        },
      });
    });
  }
  t = await startTestApp({ fixture });
  const richest = await t.database.prisma.metric.findFirstOrThrow({
    where: { relationships: { some: {} }, threads: { some: {} }, approvals: { some: {} } },
    orderBy: { id: 'asc' },
  });
  richId = richest.id;
});
afterAll(() => t.close());

/**
 * Paths of nulls under the fields read from metric columns. With every optional member set
 * (above), none is null unless its column was not read; part fields are left out (a metric may
 * have no validation, no approved version...). The first organization's metrics all have a domain.
 */
function nullColumnPaths(metric: Record<string, unknown>): string[] {
  const found: string[] = [];
  const walk = (value: unknown, path: string): void => {
    if (value === null) found.push(path);
    else if (Array.isArray(value)) for (const [i, item] of value.entries()) walk(item, `${path}[${i}]`);
    else if (typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, `${path}.${k}`);
  };
  // The lineage is a walk, not columns: its last page's cursor is null.
  for (const [name, value] of Object.entries(metric)) if (!FIELD_PARTS[name] && name !== 'lineage') walk(value, name);
  return found;
}

async function query(document: string, variables: Record<string, unknown> = {}) {
  const res = await t.inject({
    method: 'POST',
    url: '/graphql',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${AGENT_KEY}` },
    payload: { query: document, variables },
  });
  const body = res.json();
  expect(body.errors, document).toBeUndefined();
  return body.data;
}

describe('Metric fields read alone', () => {
  it('covers every field of the type', () => {
    expect(fields.length).toBeGreaterThan(50);
    expect(fields.every((field) => field.selection)).toBe(true);
  });

  it('metric(id): each field alone equals the field of the whole metric', async () => {
    const all = fields.map((field) => field.selection).join(' ');
    const whole = (await query(`query ($id: ID!) { metric(id: $id) { ${all} } }`, { id: richId })).metric;
    expect(whole.relationships.length).toBeGreaterThan(0);
    expect(nullColumnPaths(whole)).toEqual([]);
    for (const field of fields) {
      const alone = (await query(`query ($id: ID!) { metric(id: $id) { ${field.selection} } }`, { id: richId })).metric;
      expect({ [field.name]: alone[field.name] }).toStrictEqual({ [field.name]: whole[field.name] });
    }
  });

  it('items of a page: each field alone equals the field of the whole items', async () => {
    const page = (selection: string) => `{ metrics(pageSize: 100) { items { ${selection} } } }`;
    const listed = fields.filter((field) => !SINGLE_METRIC_ONLY.has(field.name));
    const whole = (await query(page(listed.map((field) => field.selection).join(' ')))).metrics.items;
    expect(whole.length).toBe(12);
    for (const item of whole) expect(nullColumnPaths(item)).toEqual([]);
    for (const field of listed) {
      const alone = (await query(page(field.selection))).metrics.items;
      expect(alone.map((item: Record<string, unknown>) => item[field.name])).toStrictEqual(
        whole.map((item: Record<string, unknown>) => item[field.name]),
      );
    }
  });
});
