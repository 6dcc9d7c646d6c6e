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

/** The host of a URL as a resolver takes it (an IPv6 literal without its brackets). */
const bareHost = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

const GLOBAL_UNICAST_IPV6 = ipaddr.parseCIDR('2000::/3');
/** NAT64's well-known prefix: DNS64 resolvers answer IPv4-only hosts in it, so a receiver may resolve to one. */
const NAT64 = ipaddr.parseCIDR('64:ff9b::/96');
const SIX_TO_FOUR = ipaddr.parseCIDR('2002::/16');

/**
 * The IPv4 address a connection to an IPv6 address of a translating form
 * reaches: IPv4-mapped (the host's own stack), NAT64's well-known prefix
 * (the network's translator) and 6to4 (a relay); null for any other.
 */
function carriedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | null {
  if (address.isIPv4MappedAddress()) return address.toIPv4Address();
  const [, p1 = 0, p2 = 0, , , , p6 = 0, p7 = 0] = address.parts;
  if (address.match(NAT64)) return new ipaddr.IPv4([p6 >> 8, p6 & 0xff, p7 >> 8, p7 & 0xff]);
  if (address.match(SIX_TO_FOUR)) return new ipaddr.IPv4([p1 >> 8, p1 & 0xff, p2 >> 8, p2 & 0xff]);
  return null;
}

/**
 * An allow rule, not a list of exclusions: an address is public when it is
 * globally routable unicast. IPv4: what ipaddr.js calls `unicast`, the range
 * left once every special one is named (loopback, private, carrier-grade NAT,
 * link-local, multicast, unspecified, broadcast, the benchmark, documentation
 * and reserved ranges). IPv6: within 2000::/3, the only block allocated for
 * global unicast, and `unicast` there too (not Teredo, documentation,
 * benchmark, ORCHID, ...); an address of a translating form is judged as the
 * IPv4 address it reaches. Everything else is refused, the IPv4-compatible
 * `::a.b.c.d` (deprecated, outside 2000::/3) and NAT64's local-use prefix
 * among them, whatever they carry.
 */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return ipaddr.IPv4.parse(address).range() === 'unicast';
  if (family !== 6) return false;
  let parsed: ipaddr.IPv6;
  try {
    // Through its WHATWG hex form: ipaddr.js reads the dotted `::a.b.c.d` (IPv4-compatible, as resolvers
    // print it) as IPv4-mapped. A zone (`fe80::1%eth0`) is no URL host, and refused.
    parsed = ipaddr.IPv6.parse(bareHost(new URL(`http://[${address}]/`)));
  } catch {
    return false;
  }
  const carried = carriedIPv4(parsed);
  if (carried) return carried.range() === 'unicast';
  return parsed.match(GLOBAL_UNICAST_IPV6) && parsed.range() === 'unicast';
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
