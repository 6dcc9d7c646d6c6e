/**
 * A URL that cannot be decoded never reaches a route (Fastify refuses it while
 * routing): it is answered in the error catalogue's shape, never Fastify's own.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError } from '../rest/expectations.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

it('a metric route with an undecodable id answers Invalid metric ID format', async () => {
  expectError(await t.get('/api/v1/metrics/%ED%A0%80/contract'), 400, { error: 'Invalid metric ID format' });
  expectError(await t.get('/api/v1/metrics/%ED%A0%80'), 400, { error: 'Invalid metric ID format' });
});

it('any other route with an undecodable URL answers 400 { error }', async () => {
  const response = await t.get('/docs/%ED%A0%80');
  expect(response.statusCode).toBe(400);
  expect(Object.keys(response.json())).toEqual(['error']);
});
