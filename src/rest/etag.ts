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
import { parseIfNoneMatch } from '../http/if-none-match.js';

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
