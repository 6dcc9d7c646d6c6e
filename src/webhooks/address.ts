/**
 * Where a webhook may point (SSRF): an http(s) URL without credentials or
 * fragment whose host resolves only to public unicast addresses. Checked when
 * the webhook is created and again before each delivery connects, to the
 * address that was checked (src/webhooks/send.ts), so a DNS answer changed in
 * between (rebinding) cannot redirect it.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { WebhookSettings } from './settings.js';

export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** A URL refused; the message says why and is shown as is. */
export class WebhookUrlError extends Error {}

/**
 * Public: what ipaddr.js calls `unicast`, the range left once every special
 * one is named (loopback, private, carrierGradeNat, linkLocal, uniqueLocal,
 * multicast, unspecified, broadcast, reserved, the documentation, 6to4,
 * Teredo and NAT64 prefixes, ...). An IPv4-mapped IPv6 address is judged as
 * the IPv4 address it carries.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.parse(address);
  const judged = parsed instanceof ipaddr.IPv6 && parsed.isIPv4MappedAddress() ? parsed.toIPv4Address() : parsed;
  return judged.range() === 'unicast';
}

/** The URL as stored: its WHATWG normal form, so `http://0x7f.1/` is seen as the `127.0.0.1` it is. */
export function parseWebhookUrl(raw: string, settings: Pick<WebhookSettings, 'allowHttp'>): URL {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) {
    throw new WebhookUrlError(`url must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`);
  }
  // The URL parser drops tabs and line breaks silently: refuse them rather than store another URL.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]|\s/.test(raw))
    throw new WebhookUrlError('url must not contain spaces or control characters');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebhookUrlError('url is not a valid absolute URL');
  }
  const schemes = settings.allowHttp ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) {
    throw new WebhookUrlError(
      settings.allowHttp ? 'url must be an https:// or http:// URL' : 'url must be an https:// URL',
    );
  }
  if (url.username || url.password) throw new WebhookUrlError('url must not contain credentials');
  if (raw.includes('#')) throw new WebhookUrlError('url must not contain a fragment');
  if (!url.hostname) throw new WebhookUrlError('url must name a host');
  return url;
}

/** The host of a URL as a resolver takes it (an IPv6 literal without its brackets). */
const bareHost = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

/**
 * The addresses `url`'s host resolves to, every one of them public unless
 * private networks are allowed; WebhookUrlError otherwise.
 */
export async function resolveWebhookHost(
  url: URL,
  settings: Pick<WebhookSettings, 'allowPrivateNetworks'>,
): Promise<string[]> {
  const host = bareHost(url);
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);
    } catch (error) {
      throw new WebhookUrlError(
        `url host ${host} does not resolve (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
  }
  if (!addresses.length) throw new WebhookUrlError(`url host ${host} does not resolve`);
  if (!settings.allowPrivateNetworks) {
    const refused = addresses.find((address) => !isPublicAddress(address));
    if (refused !== undefined) {
      throw new WebhookUrlError(
        `url host ${host} resolves to ${refused}, which is not a public address (loopback, private, link-local, ` +
          'multicast and other special-purpose addresses are refused)',
      );
    }
  }
  return addresses;
}
