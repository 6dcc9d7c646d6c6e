/**
 * Conditional GET on the read routes (RFC 9110 sections 8.8.3 and 13.1.2):
 * a strong `ETag` on every 200, and `304 Not Modified` for a request whose
 * `If-None-Match` names the current tag.
 *
 * A tag is a hash of everything its body is made of, as the route knows it
 * before reading the body: the route (representation), the organization and
 * what the key lookup read of it, the normalized request, the versions the
 * database keeps (`metrics_version` for lists, the metric's `metric_etag`
 * version for a detail or contract, the discussion state for a summary), the
 * service's PUBLIC_APP_URL where the body shows it, and the release. No part
 * is random or per process: every instance gives the same tag for the same
 * state.
 *
 * The release is a SHA-256 of package.json and of every module of the running
 * build (dist/ as `npm start` runs it, src/ under tsx or the tests), read once:
 * code that could change a body changes every tag, so a client never gets a
 * 304 for a body an older release made.
 */
import { createHash, hash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** Sent with every 200 and 304 of the three read routes. */
export const CACHE_CONTROL = 'private, no-cache';
export const VARY = 'Authorization, X-Service-Env';

const codeRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

function hashRelease(): string {
  const hash = createHash('sha256');
  hash.update(readFileSync(join(codeRoot, '..', 'package.json')));
  const visit = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (/\.(js|ts)$/.test(entry.name)) hash.update(path.slice(codeRoot.length)).update(readFileSync(path));
    }
  };
  visit(codeRoot);
  return hash.digest('base64url');
}

let release: string | undefined;

/** The release part of every tag (computed on first use, a few milliseconds). */
export function releaseId(): string {
  release ??= hashRelease();
  return release;
}

/** A strong entity tag for the representation the parts describe. */
export function entityTag(parts: readonly unknown[]): string {
  const digest = hash('sha256', JSON.stringify([releaseId(), ...parts]), 'base64url');
  return `"${digest.slice(0, 32)}"`;
}

/** etagc (RFC 9110 section 8.8.3): %x21 / %x23-7E / obs-text. */
function isEtagChar(code: number): boolean {
  return code === 0x21 || (code >= 0x23 && code <= 0x7e) || (code >= 0x80 && code <= 0xff);
}

const isOws = (code: number) => code === 0x20 || code === 0x09;

/**
 * `If-None-Match`: `*`, or the opaque tags of its list (weak or not: the
 * comparison is weak); null when absent or malformed (then it is ignored).
 *
 * One pass over the characters, each looked at once: a header of any length
 * costs time in proportion to it (a backtracking pattern here was quadratic
 * in the whitespace after a comma, and a long header held the event loop).
 */
export function parseIfNoneMatch(value: string | string[] | undefined): '*' | string[] | null {
  if (value === undefined) return null;
  const text = (Array.isArray(value) ? value.join(', ') : value).trim();
  if (text === '*') return '*';
  const tags: string[] = [];
  const end = text.length;
  let i = 0;
  while (i < end) {
    while (i < end && isOws(text.charCodeAt(i))) i++;
    if (text.charCodeAt(i) === 0x57 /* W */ && text.charCodeAt(i + 1) === 0x2f /* / */) {
      i += 2;
      if (text.charCodeAt(i) !== 0x22) return null;
    }
    if (text.charCodeAt(i) === 0x22 /* " */) {
      const open = i++;
      while (i < end && isEtagChar(text.charCodeAt(i))) i++;
      if (text.charCodeAt(i) !== 0x22) return null;
      i++;
      tags.push(text.slice(open, i));
    }
    while (i < end && isOws(text.charCodeAt(i))) i++;
    if (i < end && text.charCodeAt(i++) !== 0x2c /* , */) return null;
  }
  return tags.length ? tags : null;
}

/** Whether the request's If-None-Match names `tag` (weak comparison) or is `*`. */
export function noneMatchFails(request: FastifyRequest, tag: string): boolean {
  const condition = parseIfNoneMatch(request.headers['if-none-match']);
  if (condition === null) return false;
  return condition === '*' || condition.includes(tag);
}

/** The validator and caching headers of a 200. */
export function setValidators(reply: FastifyReply, tag: string): void {
  reply.header('ETag', tag);
  reply.header('Cache-Control', CACHE_CONTROL);
  varyOnCredentials(reply);
}

/** Vary by the credentials, keeping what is there already (`Origin`, when CORS_ORIGINS is set). */
function varyOnCredentials(reply: FastifyReply): void {
  const existing = reply.getHeader('Vary');
  reply.header('Vary', existing ? `${existing}, ${VARY}` : VARY);
}

/** 304 Not Modified: the validator and caching headers (and `extra`), no body. */
export function sendNotModified(reply: FastifyReply, tag: string, extra: Record<string, string> = {}): FastifyReply {
  setValidators(reply, tag);
  reply.headers(extra);
  return reply.code(304).send();
}
