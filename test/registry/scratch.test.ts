import { it } from 'vitest';
import { createServiceToken } from '../../src/admin/service-tokens.js';
import { registry } from '../fixtures/registry.js';
import { startTestApp } from '../helpers/app.js';

it('scratch', async () => {
  const r = registry();
  const acme = r.org();
  const key = acme.key();
  const t = await startTestApp({ fixture: r.build() });
  const tok = await createServiceToken(t.database.prisma, { org: acme.slug, name: 'ci', scopes: ['registry:write', 'validations:write'] });
  const doc = `organization: ${acme.slug}
defaults:
  project: Core
  owner_team: Finance
metrics:
  - key: nrr
    name: Net Revenue Retention
    description: Kept revenue.
    sql_expression: SUM(a)
    lifecycle_status: RELEASED
    aliases: [NRR]
    versions:
      - definition_version: 1.0.0
        status: released
        released_at: 2026-02-15T00:00:00Z
    approvals:
      - definition_version: 1.0.0
        approver_role: finance_controller
        approver: ${acme.owner.email}
        decision: approved
        decided_at: 2026-02-14T10:00:00Z
    relationships:
      - kind: related_to
        target: other
  - key: other
    name: Other
    description: d
    sql_expression: x
`;
  const res = await t.inject({ method: 'PUT', url: '/api/registry', headers: { authorization: `Bearer ${tok.secret}`, 'content-type': 'application/yaml' }, payload: doc });
  console.log(res.statusCode, res.body, res.headers);
  const id = res.statusCode === 200 ? (await t.database.prisma.metric.findFirstOrThrow({ where: { key: 'nrr' } })).id : '';
  const d = await t.get(`/api/v1/metrics/${id}`, key.secret);
  console.log(JSON.stringify(d.json(), null, 1), d.headers.etag);
  const c = await t.get(`/api/v1/metrics/${id}/contract`, key.secret);
  console.log(JSON.stringify(c.json(), null, 1));
  const s = await t.get(`/api/v1/metrics?q=NRR`, key.secret);
  console.log(JSON.stringify(s.json(), null, 1));
  const bad = await t.inject({ method: 'PUT', url: '/api/registry', headers: { authorization: `Bearer ${tok.secret}`, 'content-type': 'application/yaml' }, payload: doc.replace('lifecycle_status: RELEASED', 'lifecycle_status: SHIPPED\n    bogus: 1') });
  console.log(bad.statusCode, bad.body);
  await t.close();
});
