/**
 * On a write route, a query parameter the route does not take is a 400
 * naming it, answered before the body is read: `PUT /api/registry?check=true`
 * (a guess at a drift check) applied the document and emitted its events.
 * Each write route, through a real listening socket; nothing is written.
 */

import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/admin/api-keys.js';
import { createServiceToken } from '../../src/admin/service-tokens.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { doc, docMetric, HOST, newTeamOrg, type TeamOrg } from '../registry/support.js';

let t: TestApp;
let port: number;
let org: TeamOrg;
beforeAll(async () => {
  t = await startTestApp();
  port = Number(new URL(await t.app.listen({ port: 0, host: '127.0.0.1' })).port);
  org = await newTeamOrg(t.database.prisma);
});
afterAll(() => t?.close());

interface Answer {
  status: number;
  body: { error?: unknown };
}

/** A request over the socket with the headers given as they are (Host included). */
function send(method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers: { host: HOST, ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : {} }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const asToken = () => ({ authorization: `Bearer ${org.token}`, 'content-type': 'application/json' });
const asOwner = (json = true) => ({
  cookie: `session=${org.ownerSession}`,
  ...(json ? { 'content-type': 'application/json' } : {}),
});

const events = () => t.database.prisma.changeEvent.count({ where: { orgId: org.id } });

describe('an unknown query parameter on a write route', () => {
  it('PUT /api/registry?verify=true: 400 naming it and the parameters the route takes; nothing applied', async () => {
    const document = JSON.stringify(doc(org.slug, [docMetric('revenue')]));
    const res = await send('PUT', '/api/registry?verify=true', asToken(), document);
    expect(res).toEqual({
      status: 400,
      body: {
        error:
          'unknown query parameter "verify": this route takes dry_run, prune, format, default_lifecycle, ' +
          'allow_removals, source, force_conflicts, check',
      },
    });
    // A misspelling of a known one is as unknown.
    expect((await send('PUT', '/api/registry?dryrun=true&prune=true', asToken(), document)).body).toEqual({
      error: expect.stringMatching(/^unknown query parameter "dryrun": /),
    });
    expect(await t.database.prisma.metric.count({ where: { orgId: org.id } })).toBe(0);
    expect(await events()).toBe(0);
    // The parameters it takes are still taken.
    const dryRun = await send('PUT', '/api/registry?dry_run=true&format=registry', asToken(), document);
    expect(dryRun.status, JSON.stringify(dryRun.body)).toBe(200);
    expect(await events()).toBe(0);
  });

  it('is refused before the body is read: a body the route would refuse is never looked at', async () => {
    const res = await send('PUT', '/api/registry?verify', asToken(), '{ not json');
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/^unknown query parameter "verify": /);
  });

  it('POST /api/validations?dry_run=true: 400; no evidence recorded', async () => {
    await send('PUT', '/api/registry', asToken(), JSON.stringify(doc(org.slug, [docMetric('orders')])));
    const before = await events();
    const body = JSON.stringify({
      results: [{ metric_key: 'orders', ran_at: '2026-03-01T00:00:00Z', status: 'passed' }],
    });
    const res = await send('POST', '/api/validations?dry_run=true', asToken(), body);
    expect(res).toEqual({ status: 400, body: { error: 'unknown query parameter "dry_run": this route takes none' } });
    expect(await t.database.prisma.validation.count({ where: { metric: { orgId: org.id } } })).toBe(0);
    expect(await events()).toBe(before);
  });

  it('the credential routes: 400, nothing created or revoked', async () => {
    const prisma = t.database.prisma;
    const keys = () => prisma.apiKey.count({ where: { orgId: org.id } });
    const tokens = () => prisma.serviceToken.count({ where: { orgId: org.id } });
    const [keysBefore, tokensBefore] = [await keys(), await tokens()];
    const none = (name: string) => ({
      status: 400,
      body: { error: `unknown query parameter "${name}": this route takes none` },
    });

    expect(await send('POST', '/api/api-keys?sandbox=true', asOwner(), JSON.stringify({ name: 'BI' }))).toEqual(
      none('sandbox'),
    );
    expect(
      await send(
        'POST',
        '/api/service-tokens?x=1',
        asOwner(),
        JSON.stringify({ name: 'CI', scopes: ['registry:write'] }),
      ),
    ).toEqual(none('x'));
    expect([await keys(), await tokens()]).toEqual([keysBefore, tokensBefore]);

    const key = await createApiKey(prisma, { org: org.slug, name: 'kept' });
    const token = await createServiceToken(prisma, { org: org.slug, name: 'kept', scopes: ['registry:write'] });
    expect(await send('DELETE', `/api/api-keys/${key.id}?force=true`, asOwner(false))).toEqual(none('force'));
    expect(await send('DELETE', `/api/service-tokens/${token.id}?force=true`, asOwner(false))).toEqual(none('force'));
    expect((await prisma.apiKey.findUniqueOrThrow({ where: { id: key.id } })).revokedAt).toBeNull();
    expect((await prisma.serviceToken.findUniqueOrThrow({ where: { id: token.id } })).revokedAt).toBeNull();
  });

  it('the webhook routes: 400 before the route looks for the webhook; none created', async () => {
    const webhooks = () => t.database.prisma.webhook.count({ where: { orgId: org.id } });
    const none = (name: string) => ({
      status: 400,
      body: { error: `unknown query parameter "${name}": this route takes none` },
    });
    const body = JSON.stringify({ url: 'https://hooks.example.com/metrics' });
    expect(await send('POST', '/api/webhooks?verify=false', asOwner(), body)).toEqual(none('verify'));
    expect(await webhooks()).toBe(0);
    // An unknown webhook would be a 404 from the route: the 400 comes first.
    const id = randomUUID();
    expect(await send('DELETE', `/api/webhooks/${id}?x`, asOwner(false))).toEqual(none('x'));
    expect(await send('POST', `/api/webhooks/${id}/enable?x`, asOwner(), '{}')).toEqual(none('x'));
    expect(await send('POST', `/api/webhooks/${id}/test?x`, asOwner(), '{}')).toEqual(none('x'));
    // Without the parameter the same request reaches the route.
    expect((await send('DELETE', `/api/webhooks/${id}`, asOwner(false))).status).toBe(404);
  });

  it('a read route keeps ignoring what it does not know', async () => {
    const res = await send('GET', '/api/webhooks?x=1', asOwner(false));
    expect(res.status).toBe(200);
  });
});
