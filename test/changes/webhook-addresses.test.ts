/**
 * The webhook address rule (src/webhooks/address.ts): only globally routable
 * unicast is public, however an address is written, and an IPv6 form that
 * reaches an IPv4 address is judged as that address. The routes' refusals
 * are in webhooks.test.ts; this is the rule alone, address by address.
 */
import { describe, expect, it } from 'vitest';
import { isPublicAddress, parseWebhookUrl, resolveWebhookHost } from '../../src/webhooks/address.js';

const REFUSED = {
  'IPv4 loopback': ['127.0.0.1', '127.255.255.254'],
  'IPv4 private': ['10.0.0.1', '172.16.5.4', '172.31.255.255', '192.168.1.1'],
  'IPv4 link-local (cloud metadata)': ['169.254.169.254', '169.254.0.1'],
  'carrier-grade NAT 100.64/10': ['100.64.0.1', '100.127.255.254'],
  'benchmark 198.18/15': ['198.18.0.1', '198.19.255.254'],
  'documentation ranges': ['192.0.2.1', '198.51.100.7', '203.0.113.9', '2001:db8::1', '3fff::1'],
  'IETF protocol assignments, 6to4 relay anycast, reserved 240/4': ['192.0.0.8', '192.88.99.1', '240.0.0.1'],
  'unspecified, this network': ['0.0.0.0', '0.1.2.3', '::'],
  broadcast: ['255.255.255.255'],
  multicast: ['224.0.0.1', '239.255.255.250', 'ff02::1', 'ff05::1:3'],
  'IPv6 loopback, link-local, unique-local, site-local': ['::1', 'fe80::1', 'fd00::1', 'fc00::1', 'fec0::1'],
  'IPv4-compatible (deprecated), whatever it carries': ['::7f00:1', '::127.0.0.1', '::a9fe:a9fe', '::808:808'],
  'IPv4-mapped of a non-public address': ['::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:a9fe:a9fe', '::ffff:a00:1'],
  'IPv4-translated (SIIT)': ['::ffff:0:7f00:1', '::ffff:0:808:808'],
  'NAT64 of a non-public address': ['64:ff9b::7f00:1', '64:ff9b::a9fe:a9fe', '64:ff9b::a00:1'],
  'NAT64 local-use prefix': ['64:ff9b:1::808:808'],
  '6to4 of a non-public address': ['2002:7f00:1::', '2002:a9fe:a9fe::1', '2002:c0a8:101::1'],
  Teredo: ['2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2'],
  'discard, benchmark, ORCHID': ['100::1', '2001:2::1', '2001:20::1'],
  'outside 2000::/3': ['4000::1', 'e000::1', '1::1'],
  'a zone, or not an address': ['fe80::1%eth0', '2130706433', '0x7f.1', '0177.0.0.1', '1.2.3', 'localhost', ''],
};

const ALLOWED = [
  '8.8.8.8',
  '93.184.215.14',
  '1.1.1.1',
  '2606:4700:4700::1111',
  '2a00:1450:4001:80b::200e',
  '::ffff:8.8.8.8',
  '::ffff:808:808',
  // What a DNS64 resolver answers for an IPv4-only receiver on an IPv6-only network.
  '64:ff9b::808:808',
  '2002:808:808::1',
];

describe('isPublicAddress', () => {
  for (const [kind, addresses] of Object.entries(REFUSED)) {
    it(`refuses ${kind}`, () => {
      for (const address of addresses) expect(isPublicAddress(address), address).toBe(false);
    });
  }

  it('allows globally routable unicast, and the IPv6 forms that reach it', () => {
    for (const address of ALLOWED) expect(isPublicAddress(address), address).toBe(true);
  });
});

describe('URL hosts as written', () => {
  const settings = { allowPrivateNetworks: false };

  it('every spelling of a refused address is refused once the URL is read', async () => {
    for (const raw of [
      'https://[::127.0.0.1]/',
      'https://[::a9fe:a9fe]/latest/meta-data/',
      'https://[::ffff:7f00:1]/',
      'https://[64:ff9b::7f00:1]/',
      'https://[2002:7f00:1::]/',
      'https://[::]/',
      'https://[0:0:0:0:0:0:0:1]/',
      'https://2130706433/',
      'https://0x7f000001/',
      'https://0177.0.0.1/',
      'https://0x7f.1/',
      'https://127.1/',
      'https://0/',
      'https://0.0.0.0/',
      'https://3232235777/',
      'https://0xa9.0xfe.0xa9.0xfe/',
      'https://100.64.0.1/',
      'https://198.18.0.1/',
      'https://224.0.0.1/',
      'https://255.255.255.255/',
      'https://192.0.2.1/',
      'https://[2001:db8::1]/',
    ]) {
      const url = parseWebhookUrl(raw, { allowHttp: false });
      await expect(resolveWebhookHost(url, settings), raw).rejects.toThrow(/not a public address/);
    }
  });

  it('WEBHOOK_ALLOW_PRIVATE_NETWORKS turns the rule off', async () => {
    const url = parseWebhookUrl('https://[::127.0.0.1]/', { allowHttp: false });
    expect(await resolveWebhookHost(url, { allowPrivateNetworks: true })).toEqual(['::7f00:1']);
  });
});
