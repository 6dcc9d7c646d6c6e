/**
 * What a sign-in with the provider must remember between sending the browser
 * there and its return (state, nonce, PKCE verifier, the page to come back
 * to): sealed into a short-lived cookie rather than stored. We chose the
 * cookie over a table because it needs no cleanup of abandoned sign-ins, no
 * write before the user is known (a flood of /sign-in/oidc visits costs no
 * rows), and works on every instance alike. AES-256-GCM both hides it (the
 * PKCE verifier stays secret even from whoever reads the browser's cookies)
 * and makes it tamper-evident; its key is derived from the client secret,
 * which every instance already shares, so no new secret is configured. The
 * state in the provider's redirect must equal the sealed one, which binds
 * the return to the browser that started the sign-in (no login CSRF).
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/** How long a started sign-in may take at the provider. */
export const SIGN_IN_STATE_TTL_SECONDS = 10 * 60;

export interface SignInState {
  state: string;
  nonce: string;
  codeVerifier: string;
  /** the page to land on (already a safe path), or null for the organization's home */
  next: string | null;
}

interface Sealed extends SignInState {
  /** expiry, ms since the epoch */
  exp: number;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The sealing key: HKDF-SHA-256 of the client secret, for this use only. */
export function stateKey(clientSecret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', clientSecret, 'metric-governance', 'oidc sign-in state', 32));
}

export function sealState(key: Buffer, state: SignInState, now = Date.now()): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body: Sealed = { ...state, exp: now + SIGN_IN_STATE_TTL_SECONDS * 1000 };
  const sealed = Buffer.concat([cipher.update(JSON.stringify(body), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
}

/** The state sealed in `value`; null when it is absent, altered, sealed with another key, or expired. */
export function openState(key: Buffer, value: string | undefined, now = Date.now()): SignInState | null {
  if (!value || value.length > 4096) return null;
  const raw = Buffer.from(value, 'base64url');
  if (raw.length <= IV_BYTES + TAG_BYTES) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    const text = Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString();
    const { exp, state, nonce, codeVerifier, next } = JSON.parse(text) as Sealed;
    if (typeof exp !== 'number' || exp <= now) return null;
    return { state, nonce, codeVerifier, next };
  } catch {
    return null;
  }
}
