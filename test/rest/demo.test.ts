/**
 * The demo fixture (prisma/fixtures/demo.json), loaded as `npm start` loads
 * it (dates moved to the moment of loading), serves: its agent key lists the
 * first organization's metrics and reads a contract; a key of the second
 * organization cannot read the first one's metrics; it shows every verdict
 * whenever it is loaded; each metric has its own definition; canonical_url
 * follows PORT.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { demoAsOf } from '../../src/demo.js';
import { parseEnv } from '../../src/env.js';
import { demoFixture, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, expectOk } from './expectations.js';

interface DemoOrganization {
  slug: string;
  metrics: { id: string; key: string; name: string; business_definition: Record<string, string> }[];
  api_keys: { secret: string; scopes: string[]; sandbox?: boolean; revoked_at?: string | null }[];
}

const AGENT_KEY = 'cl_e2c054bba210a48947b4e81d7a176fccf426940b';
const [acme, globex] = demoFixture.organizations as [DemoOrganization, DemoOrganization];
const globexKey = globex.api_keys.find((key) => !key.sandbox && !key.revoked_at)?.secret as string;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: demoAsOf(demoFixture, new Date()) });
});
afterAll(() => t.close());

describe('demo fixture', () => {
  it('holds the agent key in its first organization', () => {
    expect(acme.api_keys.map((key) => key.secret)).toContain(AGENT_KEY);
    expect(acme.metrics).toHaveLength(12);
  });

  it('the agent key lists every metric of the first organization', async () => {
    const body = expectOk(await t.get('/api/v1/metrics?pageSize=100', AGENT_KEY));
    expect(body.pagination).toEqual({ page: 1, pageSize: 100, total: acme.metrics.length, totalPages: 1 });
    expect(body.data.map((item: { id: string }) => item.id).sort()).toEqual(acme.metrics.map((m) => m.id).sort());
  });

  it('the agent key reads a contract', async () => {
    const metric = acme.metrics[0] as DemoOrganization['metrics'][number];
    const body = expectOk(await t.get(`/api/v1/metrics/${metric.id}/contract`, AGENT_KEY));
    expect(body.data).toMatchObject({ metric_id: metric.id, name: metric.name });
    expect(body.data.canonical_url).toMatch(new RegExp(`/${acme.slug}/metrics/${metric.id}$`));
  });

  it('a Globex key cannot read an Acme metric', async () => {
    const metric = acme.metrics[0] as DemoOrganization['metrics'][number];
    expectError(await t.get(`/api/v1/metrics/${metric.id}`, globexKey), 404, { error: 'Metric not found' });
    expectError(await t.get(`/api/v1/metrics/${metric.id}/contract`, globexKey), 404, { error: 'Metric not found' });
    const list = expectOk(await t.get('/api/v1/metrics?pageSize=100', globexKey));
    expect(list.pagination.total).toBe(globex.metrics.length);
  });
});

const DAY = 24 * 60 * 60 * 1000;
const MONTHLY_ACTIVE_USERS = '89514dcf-56f2-4a42-a913-8bde7adf648f';
type Verdict = { verdict: string; reasons: string[]; preferredMetricId: string | null };
const use: Verdict = { verdict: 'use', reasons: [], preferredMetricId: null };
const caution = (...reasons: string[]): Verdict => ({ verdict: 'use_with_caution', reasons, preferredMetricId: null });

/** What the demo was written to show: three `use`, cautions for five different reasons, two `do_not_use`. */
const DEMO_VERDICTS: Record<string, Verdict> = {
  net_revenue: caution('open_objections', 'failed_validation'),
  gross_margin_pct: use,
  monthly_active_users: use,
  weekly_active_users: caution('pre_release'),
  customer_churn_rate: caution('pre_release', 'failed_validation'),
  net_revenue_retention: use,
  trial_conversion_rate: caution('pre_release', 'open_objections', 'never_validated'),
  average_order_value: { verdict: 'do_not_use', reasons: ['deprecated'], preferredMetricId: null },
  support_first_response_time: caution('failed_validation', 'stale_validation'),
  marketing_qualified_leads: caution('pre_release'),
  revenue_per_employee: caution('pre_release', 'never_validated'),
  active_users_legacy: {
    verdict: 'do_not_use',
    reasons: ['deprecated', 'superseded'],
    preferredMetricId: MONTHLY_ACTIVE_USERS,
  },
};

async function verdicts(app: TestApp): Promise<Record<string, Verdict>> {
  const res = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: { authorization: `Bearer ${AGENT_KEY}`, 'content-type': 'application/json' },
    payload: { query: '{ metrics(pageSize: 100) { items { key trust { verdict reasons preferredMetricId } } } }' },
  });
  const body = res.json();
  expect(body.errors).toBeUndefined();
  return Object.fromEntries(
    body.data.metrics.items.map((item: { key: string; trust: Verdict }) => [item.key, item.trust]),
  );
}

describe('the demo shows every verdict whenever it is loaded', () => {
  it('loaded now', async () => {
    const shown = await verdicts(t);
    expect(shown).toStrictEqual(DEMO_VERDICTS);
    const counts = Object.values(shown).map((trust) => trust.verdict);
    expect(counts.filter((v) => v === 'use').length).toBeGreaterThanOrEqual(2);
    const cautions = new Set(
      Object.values(shown)
        .filter((trust) => trust.verdict === 'use_with_caution')
        .flatMap((trust) => trust.reasons),
    );
    expect([...cautions].sort()).toEqual([
      'failed_validation',
      'never_validated',
      'open_objections',
      'pre_release',
      'stale_validation',
    ]);
    expect(Object.values(shown).some((trust) => trust.verdict === 'do_not_use' && trust.preferredMetricId)).toBe(true);
  });

  it('loaded and read with a clock 90 days later', async () => {
    const later = new Date(Date.now() + 90 * DAY);
    const app = await startTestApp({ fixture: demoAsOf(demoFixture, later) });
    try {
      // A stale demo would say stale_validation everywhere; as of its loading it does not.
      vi.useFakeTimers({ toFake: ['Date'], now: later });
      expect(await verdicts(app)).toStrictEqual(DEMO_VERDICTS);
    } finally {
      vi.useRealTimers();
      await app.close();
    }
  });

  it('the unmoved file read today would not (the reason for moving it)', async () => {
    const app = await startTestApp({ fixture: demoFixture });
    try {
      vi.useFakeTimers({ toFake: ['Date'], now: new Date(Date.parse('2026-03-08T03:00:00Z') + 90 * DAY) });
      const shown = await verdicts(app);
      expect(Object.values(shown).filter((trust) => trust.verdict === 'use')).toEqual([]);
    } finally {
      vi.useRealTimers();
      await app.close();
    }
  });
});

describe('demo definitions and links', () => {
  it('each metric has its own business definition; Net Revenue Retention is over twelve months', () => {
    const definitions = acme.metrics.map((m) =>
      JSON.stringify([m.business_definition.included, m.business_definition.time_window]),
    );
    expect(new Set(definitions).size).toBe(acme.metrics.length);
    for (const field of ['included', 'excluded', 'caveats']) {
      expect(new Set(acme.metrics.map((m) => m.business_definition[field])).size, field).toBe(acme.metrics.length);
    }
    const nrr = acme.metrics.find((m) => m.key === 'net_revenue_retention');
    expect(nrr?.business_definition.time_window).toBe(
      'Trailing twelve months: each month is compared with the same month one year earlier, UTC.',
    );
    const mau = acme.metrics.find((m) => m.key === 'monthly_active_users');
    expect(mau?.business_definition.included).toMatch(/^Distinct signed-in users/);
  });

  it('PUBLIC_APP_URL defaults to this instance on PORT, so canonical_url follows it', async () => {
    expect(parseEnv({}).PUBLIC_APP_URL).toBe('http://localhost:3000');
    expect(parseEnv({ PORT: '4123' }).PUBLIC_APP_URL).toBe('http://localhost:4123');
    expect(parseEnv({ PORT: '4123', PUBLIC_APP_URL: 'https://metrics.example.com' }).PUBLIC_APP_URL).toBe(
      'https://metrics.example.com',
    );
    const app = await startTestApp({ fixture: demoFixture, publicAppUrl: parseEnv({ PORT: '4123' }).PUBLIC_APP_URL });
    try {
      const metric = acme.metrics[0] as DemoOrganization['metrics'][number];
      const body = expectOk(await app.get(`/api/v1/metrics/${metric.id}/contract`, AGENT_KEY));
      expect(body.data.canonical_url).toBe(`http://localhost:4123/acme/metrics/${metric.id}`);
    } finally {
      await app.close();
    }
  });
});
