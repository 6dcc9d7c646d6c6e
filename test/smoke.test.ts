import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoFixture, startTestApp, type TestApp } from './helpers/app.js';

const agentKey = 'cl_e2c054bba210a48947b4e81d7a176fccf426940b';
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: demoFixture, serverTiming: true });
});
afterAll(() => t.close());

describe('smoke', () => {
  it('lists', async () => {
    const res = await t.get('/api/v1/metrics', agentKey);
    expect(res.statusCode).toBe(200);
    console.log(res.headers['server-timing']);
    const id = res.json().data[0].id;
    const d = await t.get(`/api/v1/metrics/${id}`, agentKey);
    console.log(d.headers['server-timing']);
    const c = await t.get(`/api/v1/metrics/${id}/contract`, agentKey);
    console.log(c.headers['server-timing']);
    const s = await t.get(`/api/v1/metrics?q=revenue`, agentKey);
    console.log(s.headers['server-timing']);
  });
});
