/**
 * API-key and session-token secrets. Only SHA-256 digests are stored: the
 * secrets are 160 bits of CSPRNG output, so a fast unsalted hash is enough
 * (no dictionary to attack) and lets a key be found by its digest.
 */
import { hash, randomBytes } from 'node:crypto';

export const API_KEY_PATTERN = /^cl_[0-9a-f]{40}$/;

/** A service token (automation, write routes): never the shape of an API key, so neither is taken for the other. */
export const SERVICE_TOKEN_PATTERN = /^cls_[0-9a-f]{40}$/;

/** Characters of a key kept in clear for display (`cl_` + 8 hex). */
const KEY_PREFIX_LENGTH = 11;

/** On every request: the one-shot `hash`, cheaper than a Hash object for one short input. */
export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

export function generateApiKey(): string {
  return `cl_${randomBytes(20).toString('hex')}`;
}

export function generateServiceToken(): string {
  return `cls_${randomBytes(20).toString('hex')}`;
}

export function keyPrefix(secret: string): string {
  return secret.slice(0, KEY_PREFIX_LENGTH);
}

export function generateSessionToken(): string {
  return randomBytes(32).toString('base64url');
}
