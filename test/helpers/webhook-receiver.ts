/**
 * A webhook receiver on a port of its own, as a consumer writes one: every
 * request is verified with the `standardwebhooks` package, and the test
 * decides how each is answered (a status, or held until released).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  id: string;
  headers: Record<string, string>;
  body: string;
  event: { id: string; type: string; subject: string; data: Record<string, unknown> & { key?: string } };
  /** whether `new Webhook(secret).verify(body, headers)` accepted it */
  verified: boolean;
  at: number;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** the secret to verify with (set once the webhook is created) */
  secret: string;
  /** how the next request is answered; default 204 */
  answer: (request: Received) => number | Promise<number>;
  /** resolves once `count` requests have come (or rejects after `timeoutMs`) */
  waitFor(count: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(path = '/hooks'): Promise<Receiver> {
  const waiters: { count: number; resolve: () => void }[] = [];
  const receiver: Receiver = {
    url: '',
    received: [],
    secret: '',
    answer: () => 204,
    waitFor: (count, timeoutMs = 10_000) =>
      new Promise((resolve, reject) => {
        if (receiver.received.length >= count) return resolve(receiver.received);
        const timer = setTimeout(
          () => reject(new Error(`receiver got ${receiver.received.length} of ${count} requests`)),
          timeoutMs,
        );
        waiters.push({
          count,
          resolve: () => {
            clearTimeout(timer);
            resolve(receiver.received);
          },
        });
      }),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const server = createServer(async (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const headers = Object.fromEntries(
      Object.entries(request.headers).map(([name, value]) => [
        name,
        Array.isArray(value) ? value.join(',') : String(value),
      ]),
    );
    let verified = false;
    try {
      new Webhook(receiver.secret).verify(body, headers);
      verified = true;
    } catch {}
    const entry: Received = {
      id: headers['webhook-id'] ?? '',
      headers,
      body,
      event: JSON.parse(body),
      verified,
      at: Date.now(),
    };
    receiver.received.push(entry);
    for (const waiter of [...waiters]) {
      if (receiver.received.length >= waiter.count) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
    const status = await receiver.answer(entry);
    if (!response.destroyed) response.writeHead(status).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  return receiver;
}
