/** A revoked key fails on every instance at once (keys are never cached). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../fixtures/registry.js';
import { buildTestInstance, startTestApp, type TestApp } from '../helpers/app.js';

const fixture = registry();
const org = fixture.org({ slug: 'revoke' });
const owner = org.user({ role: 'owner', session_token: true });
const key = org.key();

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: fixture.build() });
});
afterAll(() => t.close());

describe('revocation across instances', () => {
  it('is seen by the next request on both of two instances', async () => {
    const second = await buildTestInstance(t.database);
    try {
      const read = (app: typeof second) =>
        app.inject({ method: 'GET', url: '/api/v1/metrics', headers: { authorization: `Bearer ${key.secret}` } });
      expect((await read(t.app)).statusCode).toBe(200);
      expect((await read(second)).statusCode).toBe(200);

      const revoked = await t.inject({
        method: 'DELETE',
        url: `/api/api-keys/${key.id}`,
        headers: { cookie: `session=${owner.session_token}` },
      });
      expect(revoked.statusCode).toBe(200);

      for (const app of [second, t.app]) {
        const res = await read(app);
        expect(res.statusCode).toBe(401);
        expect(res.json()).toEqual({ error: 'API key has been revoked' });
      }
    } finally {
      await second.close();
    }
  });
});
