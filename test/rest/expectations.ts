/** Assertions shared by the HTTP conformance tests. */
import { expect } from 'vitest';
import type { TestApp } from '../helpers/app.js';

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

type InjectResponse = Awaited<ReturnType<TestApp['get']>>;

/** Status, exact body and the JSON content type of an error response. */
export function expectError(res: InjectResponse, status: number, body: unknown): void {
  expect({ status: res.statusCode, body: res.json() }).toEqual({ status, body });
  expect(res.headers['content-type']).toBe(JSON_CONTENT_TYPE);
}

/** Asserts 200 with the JSON content type; returns the parsed body. */
export function expectOk(res: InjectResponse) {
  const body = res.json();
  expect(res.statusCode, JSON.stringify(body)).toBe(200);
  expect(res.headers['content-type']).toBe(JSON_CONTENT_TYPE);
  return body;
}

/**
 * Matches an ISO 8601 UTC timestamp (with `Z`, optional fraction) of the
 * same instant as `input`, which may have been given with an offset.
 */
export function utc(input: string) {
  const iso = new Date(input).toISOString();
  const ms = iso.slice(20, 23).replace(/0+$/, '');
  const fraction = ms ? `\\.${ms}0*` : '(\\.0+)?';
  return expect.stringMatching(new RegExp(`^${iso.slice(0, 19)}${fraction}Z$`));
}

/** The statement count of `Server-Timing: db;dur=<ms>;desc="<n> queries"`. */
export function statementCount(res: { headers: Record<string, unknown> }): number {
  const header = String(res.headers['server-timing'] ?? '');
  const match = /^db;dur=\d+(?:\.\d+)?;desc="(\d+) queries"$/.exec(header);
  expect(match, `Server-Timing header: ${header}`).not.toBeNull();
  return Number(match?.[1]);
}
