/**
 * Generated hostile requests (issue 33) to the administration write routes of
 * a server with a 256 MB heap, through a real socket, as an attacker holding
 * an admin session would send them: POST /api/webhooks (addresses of every
 * shape an SSRF tries, and hostile members), POST /api/webhooks/{id}/test,
 * /enable and DELETE /api/webhooks/{id}, POST /api/api-keys and
 * /api/service-tokens and their DELETE. Every body is wrong in at least one
 * place, so every answer is a 4xx within the bound, never a 5xx; /healthz
 * answers after each, and nothing is written. Bodies are written as JSON
 * text, not stringified, so that they can hold duplicate member names,
 * `__proto__` and bytes that are not UTF-8. Run counts are modest: the
 * machine is shared.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhook } from '../../src/webhooks/endpoints.js';
import { DEFAULT_WEBHOOK_SETTINGS } from '../../src/webhooks/settings.js';
import { usingPostgres } from '../helpers/database.js';
import { ANSWER_WITHIN_MS, type HostileServer, startHostileServer } from '../registry/hostile-server.js';

let h: HostileServer;
/** A webhook of the organization, to a loopback address the server refuses to send to. */
let webhookId: string;
beforeAll(async () => {
  if (!usingPostgres) return;
  h = await startHostileServer();
  const settings = { ...DEFAULT_WEBHOOK_SETTINGS, allowHttp: true, allowPrivateNetworks: true };
  webhookId = (await createWebhook(h.prisma, { org: { id: h.org.id }, url: 'http://127.0.0.1:9/' }, settings)).id;
}, 120_000);
afterAll(() => h?.stop());

const RUNS = 15;
/** The body limits of these routes: the webhook route's own, the app's for the credentials. */
const WEBHOOK_BODY_LIMIT = 16 * 1024;
const APP_BODY_LIMIT = 1024 * 1024;

const json = (value: unknown) => JSON.stringify(value);

/** A JSON object's text from its members in order: names repeated and `__proto__` are kept as written. */
const objectText = (members: readonly (readonly [string, string])[]) =>
  `{${members.map(([name, value]) => `${json(name)}:${value}`).join(',')}}`;

/** JSON text of a value no string member accepts: wrong types, deep, wide, polluting. */
const notAString = (limit: number) =>
  fc.oneof(
    fc.constantFrom('null', 'true', '0', '-0', '1e999', '18446744073709551616', '{}', '[]', '[""]'),
    fc.double().map((n) => (Number.isFinite(n) ? json(n) : '1e999')),
    fc.integer({ min: 1, max: Math.floor(limit / 2) - 16 }).map((depth) => `${'['.repeat(depth)}${']'.repeat(depth)}`),
    fc
      .integer({ min: 1, max: Math.floor(limit / 6) - 16 })
      .map((depth) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`),
    fc.integer({ min: 1, max: Math.floor(limit / 2) - 16 }).map((n) => `[${'0,'.repeat(n - 1)}0]`),
    fc.constantFrom(
      '{"__proto__":{"polluted":true}}',
      '{"constructor":{"prototype":{"polluted":true}}}',
      '[{"__proto__":{"isAdmin":true}}]',
    ),
  );

/** JSON text of a string no text member accepts: control characters, unpaired surrogates, past `maxLength`. */
const badText = (maxLength: number) =>
  fc.oneof(
    fc
      .tuple(
        fc.string({ maxLength: 10 }),
        fc.integer({ min: 0, max: 0x1f }).filter((c) => c !== 9 && c !== 10 && c !== 13),
      )
      .map(([text, code]) => json(`${text}${String.fromCharCode(code)}`)),
    fc.constantFrom(
      json('\u001b]0;owned\u0007\u001b[2J'),
      json('a\u007f'),
      json('\u009b31m'),
      '"a\\ud800b"',
      '"\\udc00"',
    ),
    fc.integer({ min: maxLength + 1, max: maxLength * 3 }).map((n) => json('x'.repeat(n))),
  );

/**
 * A body wrong in one place at least: a member given a value it refuses,
 * named twice with the wrong value last, an unknown or polluting member, or
 * the bytes of a good body with invalid UTF-8 inside a string.
 */
function hostileBody(good: [string, string][], wrong: Record<string, fc.Arbitrary<string>>, limit: number) {
  const fields = Object.keys(wrong);
  const replaced = fc
    .record({ field: fc.constantFrom(...fields), duplicate: fc.boolean() })
    .chain(({ field, duplicate }) =>
      (wrong[field] as fc.Arbitrary<string>).map((value) => {
        const kept = duplicate ? good : good.filter(([name]) => name !== field);
        return objectText([...kept, [field, value]]);
      }),
    );
  const unknownMember = fc
    .oneof(
      fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'isAdmin', ''),
      fc.string({ minLength: 1, maxLength: 20 }).filter((name) => !good.some(([known]) => known === name)),
    )
    .chain((name) =>
      fc.oneof(notAString(limit), fc.constant('{"polluted":true}')).map((value) => [name, value] as const),
    )
    .map((member) => objectText([...good, member]));
  const invalidUtf8 = fc
    .constantFrom([0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xc0, 0xaf])
    .map((bytes) => {
      const text = Buffer.from(objectText(good));
      const at = text.indexOf('"', text.indexOf(':')) + 1;
      return new Uint8Array(Buffer.concat([text.subarray(0, at), Buffer.from(bytes), text.subarray(at)]));
    });
  const notAnObject = fc.oneof(
    notAString(limit),
    fc.constantFrom('', '{', '{"name":', '"text"', objectText(good).slice(0, -1)),
  );
  return fc.oneof<fc.Arbitrary<string | Uint8Array<ArrayBuffer>>[]>(replaced, unknownMember, invalidUtf8, notAnObject);
}

/** An IPv4 address no webhook may reach: in a special-purpose range (loopback, private, link-local, ...). */
const specialIPv4 = fc
  .tuple(
    fc.constantFrom<[string, number]>(
      ['0.0.0.0', 8],
      ['10.0.0.0', 8],
      ['100.64.0.0', 10],
      ['127.0.0.0', 8],
      ['169.254.0.0', 16],
      ['172.16.0.0', 12],
      ['192.0.0.0', 24],
      ['192.0.2.0', 24],
      ['192.168.0.0', 16],
      ['198.18.0.0', 15],
      ['198.51.100.0', 24],
      ['203.0.113.0', 24],
      ['224.0.0.0', 4],
      ['240.0.0.0', 4],
    ),
    fc.integer({ min: 0, max: 0xffffffff }),
  )
  .map(([[base, bits], random]) => {
    const network = base.split('.').reduce((n, part) => n * 256 + Number(part), 0);
    return (network | (random & (0xffffffff >>> bits))) >>> 0;
  });

const dotted = (n: number) => [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff].join('.');
const hex16 = (n: number) => [(n >>> 16).toString(16), (n & 0xffff).toString(16)].join(':');

/** The special IPv4 address in each spelling a URL parser or a connect() takes, IPv6 forms that carry it included. */
const specialIPv4Host = fc
  .tuple(
    specialIPv4,
    fc.constantFrom(
      'dotted',
      'decimal',
      'hex',
      'octal',
      'short',
      'mapped',
      'compatible',
      'nat64',
      '6to4',
      'mapped-hex',
    ),
  )
  .map(([n, form]) => {
    switch (form) {
      case 'decimal':
        return String(n);
      case 'hex':
        return `0x${n.toString(16)}`;
      case 'octal':
        return `0${n.toString(8)}`;
      case 'short':
        return `${n >>> 24}.${n & 0xffffff}`;
      case 'mapped':
        return `[::ffff:${dotted(n)}]`;
      case 'mapped-hex':
        return `[::ffff:${hex16(n)}]`;
      case 'compatible':
        return `[::${dotted(n)}]`;
      case 'nat64':
        return `[64:ff9b::${dotted(n)}]`;
      case '6to4':
        return `[2002:${hex16(n)}::1]`;
      default:
        return dotted(n);
    }
  });

const word = fc.integer({ min: 0, max: 0xffff }).map((n) => n.toString(16));
/** IPv6 addresses outside global unicast, or special inside it. */
const specialIPv6Host = fc.oneof(
  fc.constantFrom(
    '[::1]',
    '[::]',
    '[fe80::1]',
    '[fc00::1]',
    '[fd12:3456::1]',
    '[ff02::1]',
    '[2001:db8::1]',
    '[2001::1]',
  ),
  fc
    .tuple(
      fc.constantFrom('fe80', 'fc00', 'fd00', 'ff0e', '2001:db8', '100', '0', '4000', 'e000'),
      fc.array(word, { maxLength: 4 }),
    )
    .map(([prefix, rest]) => `[${prefix}::${rest.join(':')}]`.replace(':::', '::')),
);

/** Names that resolve to loopback, or not at all. */
const nameHost = fc.oneof(
  fc.constantFrom('localhost', 'LOCALHOST.', 'a.localhost', 'nowhere.invalid', 'metadata.google.internal.invalid'),
  fc
    .array(fc.stringMatching(/^[a-z0-9-]{1,20}$/), { minLength: 1, maxLength: 4 })
    .map((labels) => `${labels.join('.')}.invalid`),
);

const host = fc.oneof(specialIPv4Host, specialIPv6Host, nameHost);
const port = fc.oneof(
  fc.constant(''),
  fc.integer({ min: 0, max: 70_000 }).map((p) => `:${p}`),
);
const path = fc.string({ maxLength: 30 }).map((text) => `/${encodeURIComponent(text).replace(/%2F/g, '/')}`);

/** A URL that POST /api/webhooks must refuse: what it reaches, how it is spelt, or both. */
const hostileUrl = fc.oneof(
  fc
    .tuple(fc.constantFrom('https://', 'http://', 'HTTPS://'), host, port, path)
    .map(([scheme, at, p, rest]) => `${scheme}${at}${p}${rest}`),
  fc
    .tuple(
      fc.constantFrom(
        'ftp://',
        'file://',
        'gopher://',
        'ws://',
        'javascript:',
        'data:text/plain,',
        'mailto:',
        '//',
        '',
      ),
      fc.oneof(host, fc.constant('example.com')),
      path,
    )
    .map(([scheme, at, rest]) => `${scheme}${at}${rest}`),
  fc
    .tuple(fc.constantFrom('user:pw@', 'user@', ':@'), fc.oneof(host, fc.constant('example.com')))
    .map(([credentials, at]) => `https://${credentials}${at}/`),
  fc.constantFrom(
    'https://example.com/#fragment',
    'https://example.com/\t',
    'https://exa\nmple.com/',
    'https:// example.com/',
    'https://example.com/\u0000',
    'https:///',
    'https://',
    'https://[::1',
    'https://256.256.256.256/',
    'https://%00/',
    'https://a..b/',
    'https://xn--/',
    'https://[fe80::1%25eth0]/',
    'https://0/',
    'https://127.1/',
    'https://0177.0.0.1/',
    'https://[::ffff:127.0.0.1]:443/',
    'https://[::127.0.0.1]/',
    'https://[::a9fe:a9fe]/',
    'https://169.254.169.254/latest/meta-data/',
    'https://ex\u00e4mple.invalid/',
    'https://\uff10x7f.1/',
  ),
  fc.integer({ min: 2_049, max: 12_000 }).map((n) => `https://a.invalid/${'x'.repeat(n)}`),
);

/** Text of a string: a path segment, or anything, as bytes percent-encoded (invalid UTF-8 included). */
const hostileId = fc.oneof(
  fc.constantFrom(
    '00000000-0000-0000-0000-000000000000',
    'ffffffff-ffff-ffff-ffff-ffffffffffff',
    '__proto__',
    'constructor',
  ),
  fc.uuid(),
  fc
    .uint8Array({ minLength: 1, maxLength: 300 })
    .map((bytes) => [...bytes].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')),
  fc.integer({ min: 1_000, max: 60_000 }).map((n) => 'a'.repeat(n)),
);

async function expectRefused(method: 'POST' | 'DELETE', target: string, body?: string | Uint8Array<ArrayBuffer>) {
  const before = await h.written();
  const started = Date.now();
  const res = await h.admin(method, target, body);
  const shown = `${method} ${target.slice(0, 120)} ${typeof body === 'string' ? body.slice(0, 200) : ''} -> ${res.body.slice(0, 300)}`;
  expect(res.status, shown).toBeGreaterThanOrEqual(400);
  expect(res.status, shown).toBeLessThan(500);
  expect(Date.now() - started).toBeLessThan(ANSWER_WITHIN_MS);
  expect(await h.health()).toBe(200);
  expect(await h.written(), shown).toEqual(before);
}

describe.skipIf(!usingPostgres)('hostile requests to the administration routes never take the server down', () => {
  it('bytes that are not UTF-8 in a name or a description are refused, not stored as U+FFFD', async () => {
    const withByte = (before: string, after: string) =>
      new Uint8Array(Buffer.concat([Buffer.from(before), Buffer.from([0xff]), Buffer.from(after)]));
    const bodies = [
      ['/api/api-keys', withByte('{"name":"read', 'er"}')],
      ['/api/service-tokens', withByte('{"name":"C', 'I","scopes":["registry:write"]}')],
      ['/api/webhooks', withByte('{"url":"https://nowhere.invalid/","description":"B', 'I"}')],
    ] as const;
    for (const [route, body] of bodies) {
      await expectRefused('POST', route, body);
      expect(JSON.parse((await h.admin('POST', route, body)).body)).toEqual({
        error: 'The request body is not valid UTF-8',
      });
    }
  });

  it('POST /api/webhooks: addresses of every shape an SSRF tries', async () => {
    await fc.assert(
      fc.asyncProperty(hostileUrl, fc.boolean(), async (url, alone) => {
        const members: [string, string][] = alone
          ? [['url', json(url)]]
          : [
              ['url', json(url)],
              ['types', json(['metric.created'])],
              ['description', json('BI cache')],
            ];
        await expectRefused('POST', '/api/webhooks', objectText(members));
      }),
      { numRuns: RUNS * 3 },
    );
  });

  it('POST /api/webhooks: hostile members', async () => {
    const good: [string, string][] = [
      ['url', json('https://nowhere.invalid/hook')],
      ['types', json(['metric.created'])],
      ['description', json('BI cache')],
    ];
    const body = hostileBody(
      good,
      {
        url: fc.oneof(notAString(WEBHOOK_BODY_LIMIT), badText(2_048)),
        types: fc.oneof(
          notAString(WEBHOOK_BODY_LIMIT).filter((text) => text !== '[]'),
          badText(100).map((text) => `[${text}]`),
          fc.integer({ min: 51, max: 2_000 }).map((n) => json(new Array(n).fill('metric.created'))),
        ),
        description: fc.oneof(
          notAString(WEBHOOK_BODY_LIMIT).filter((text) => text !== 'null'),
          badText(500),
        ),
      },
      WEBHOOK_BODY_LIMIT,
    );
    await fc.assert(
      fc.asyncProperty(body, async (text) => expectRefused('POST', '/api/webhooks', text)),
      { numRuns: RUNS },
    );
  });

  it('POST /api/webhooks/{id}/test, /enable and DELETE /api/webhooks/{id}: hostile ids, bodies and parameters', async () => {
    const route = fc.constantFrom(['POST', '/test'] as const, ['POST', '/enable'] as const, ['DELETE', ''] as const);
    const request = fc.oneof(
      // An id of no webhook of the organization: 404 (or 400), whatever its bytes.
      fc.tuple(route, hostileId).map(([[method, suffix], id]) => ({
        method,
        target: `/api/webhooks/${id}${suffix}`,
        body: method === 'POST' ? '{}' : undefined,
      })),
      // The organization's webhook, with a query parameter none of these routes takes.
      fc
        .tuple(
          route,
          fc.oneof(fc.constantFrom('__proto__', 'constructor', 'dry_run'), fc.string({ minLength: 1, maxLength: 20 })),
          fc.string({ maxLength: 20 }),
        )
        .map(([[method, suffix], name, value]) => ({
          method,
          target: `/api/webhooks/${webhookId}${suffix}?${new URLSearchParams([[name, value]])}`,
          body: method === 'POST' ? '{}' : undefined,
        })),
      // The organization's webhook, with a body that is no JSON, or too large (these routes read none).
      fc
        .tuple(
          fc.constantFrom('/test', '/enable'),
          fc.oneof(fc.constantFrom('{', '{"a":', '\u0000', '[1,]'), fc.constant(`"${'x'.repeat(APP_BODY_LIMIT + 1)}"`)),
        )
        .map(([suffix, body]) => ({ method: 'POST' as const, target: `/api/webhooks/${webhookId}${suffix}`, body })),
    );
    await fc.assert(
      fc.asyncProperty(request, async ({ method, target, body }) => expectRefused(method, target, body)),
      { numRuns: RUNS * 2 },
    );
  });

  it('POST /api/api-keys: hostile members', async () => {
    const good: [string, string][] = [
      ['name', json('reader')],
      ['sandbox', 'false'],
      ['rate_limit_per_minute', '600'],
    ];
    const body = hostileBody(
      good,
      {
        name: fc.oneof(notAString(APP_BODY_LIMIT), badText(200), fc.constantFrom('""', '"   "', '"\\t\\n"')),
        scopes: fc.oneof(
          notAString(APP_BODY_LIMIT).filter((text) => text !== 'null'),
          fc.array(fc.string({ maxLength: 30 }), { maxLength: 5 }).map(json),
          badText(100).map((text) => `[${text}]`),
        ),
        sandbox: fc.oneof(
          notAString(APP_BODY_LIMIT).filter((text) => text !== 'true'),
          fc.constantFrom('"true"', '1'),
        ),
        rate_limit_per_minute: fc.oneof(
          notAString(APP_BODY_LIMIT).filter(
            (text) => text !== 'null' && (!/^\d+$/.test(text) || BigInt(text) > 2_147_483_647n),
          ),
          fc.constantFrom('0', '-1', '1.5', '2147483648', '"60"', '1e10', 'NaN', 'Infinity'),
        ),
      },
      APP_BODY_LIMIT,
    );
    await fc.assert(
      fc.asyncProperty(body, async (text) => expectRefused('POST', '/api/api-keys', text)),
      { numRuns: RUNS },
    );
  });

  it('POST /api/service-tokens: hostile members', async () => {
    const good: [string, string][] = [
      ['name', json('CI')],
      ['scopes', json(['registry:write'])],
    ];
    const body = hostileBody(
      good,
      {
        name: fc.oneof(notAString(APP_BODY_LIMIT), badText(200), fc.constantFrom('""', '"   "')),
        scopes: fc.oneof(
          notAString(APP_BODY_LIMIT),
          fc.array(fc.string({ maxLength: 30 }), { minLength: 1, maxLength: 8 }).map(json),
          fc.constantFrom('[]', json(['registry:write', 'admin']), json(new Array(9).fill('registry:write'))),
          badText(64).map((text) => `[${text}]`),
        ),
      },
      APP_BODY_LIMIT,
    );
    await fc.assert(
      fc.asyncProperty(body, async (text) => expectRefused('POST', '/api/service-tokens', text)),
      { numRuns: RUNS },
    );
  });

  it('DELETE /api/api-keys/{id} and /api/service-tokens/{id}: ids of no credential of the organization', async () => {
    const request = fc.tuple(fc.constantFrom('/api/api-keys/', '/api/service-tokens/'), hostileId);
    await fc.assert(
      fc.asyncProperty(request, async ([route, id]) => expectRefused('DELETE', `${route}${id}`)),
      { numRuns: RUNS },
    );
  });
});
