/**
 * One POST of a signed event to an endpoint: the host is resolved and every
 * address checked (src/webhooks/address.ts), then the connection goes to the
 * checked address while TLS and Host keep the URL's hostname. No redirect is
 * followed; at most 4 KiB of the answer is read; the whole attempt, connect
 * to last byte, is bounded by the timeout.
 */
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { resolveWebhookHost, WebhookUrlError } from './address.js';
import type { WebhookSettings } from './settings.js';

/** The most of a response body read (and then dropped). */
const MAX_RESPONSE_BYTES = 4096;

export interface SendOutcome {
  ok: boolean;
  /** null when no response came */
  statusCode: number | null;
  /** why it failed, when it did */
  error: string | null;
  durationMs: number;
}

/** The send was cut off because the worker stops: no outcome to record. */
export class SendAborted extends Error {}

function pinnedLookup(address: string): LookupFunction {
  const family = isIP(address);
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

function post(url: URL, body: string, headers: Record<string, string>, address: string, signal: AbortSignal) {
  return new Promise<number>((resolve, reject) => {
    const client = url.protocol === 'https:' ? https : http;
    const request = client.request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        lookup: pinnedLookup(address),
        // One connection per attempt: a pooled socket would outlive the check of its address.
        agent: false,
        signal,
      },
      (response) => {
        let read = 0;
        const done = () => {
          response.destroy();
          resolve(response.statusCode ?? 0);
        };
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read >= MAX_RESPONSE_BYTES) done();
        });
        response.on('end', done);
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

export async function sendSigned(
  rawUrl: string,
  body: string,
  headers: Record<string, string>,
  settings: Pick<WebhookSettings, 'allowPrivateNetworks' | 'timeoutMs'>,
  stop: AbortSignal,
): Promise<SendOutcome> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const timeout = AbortSignal.timeout(settings.timeoutMs);
  const failed = (error: string): SendOutcome => ({ ok: false, statusCode: null, error, durationMs: elapsed() });
  try {
    const url = new URL(rawUrl);
    const [address = ''] = await resolveWebhookHost(url, settings);
    const statusCode = await post(url, body, headers, address, AbortSignal.any([timeout, stop]));
    const ok = statusCode >= 200 && statusCode < 300;
    const error = ok ? null : statusCode >= 300 && statusCode < 400 ? 'redirects are not followed' : null;
    return { ok, statusCode, error, durationMs: elapsed() };
  } catch (error) {
    if (stop.aborted) throw new SendAborted();
    if (timeout.aborted) return failed(`no answer within ${settings.timeoutMs} ms`);
    if (error instanceof WebhookUrlError) return failed(error.message);
    const code = (error as NodeJS.ErrnoException).code;
    return failed(`connection failed: ${code ?? (error as Error).message}`);
  }
}
