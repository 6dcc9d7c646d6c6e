/**
 * The demo fixture (prisma/fixtures/demo.json) loads and serves: its agent
 * key lists the first organization's metrics and reads a contract; a key of
 * the second organization cannot read the first one's metrics.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoFixture, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, expectOk } from './expectations.js';

interface DemoOrganization {
  slug: string;
  metrics: { id: string; name: string }[];
  api_keys: { secret: string; scopes: string[]; sandbox?: boolean; revoked_at?: string | null }[];
}

const AGENT_KEY = 'cl_e2c054bba210a48947b4e81d7a176fccf426940b';
const [acme, globex] = demoFixture.organizations as [DemoOrganization, DemoOrganization];
const globexKey = globex.api_keys.find((key) => !key.sandbox && !key.revoked_at)?.secret as string;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: demoFixture });
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
