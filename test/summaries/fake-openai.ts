/**
 * A local OpenAI-compatible chat-completions server (127.0.0.1, ephemeral
 * port) whose behaviour a test switches: answer, answer slowly, or fail.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeOpenAI {
  /** ends in /v1, like SUMMARY_OPENAI_BASE_URL */
  baseUrl: string;
  mode: 'ok' | 'error';
  /** delay before answering */
  delayMs: number;
  /** while true, answers wait (after the delay) until `release()` */
  hold: boolean;
  /** answers every held request and stops holding */
  release(): void;
  reply: string;
  requests: { url: string; headers: IncomingHttpHeaders; body: { model: string; messages: { content: string }[] } }[];
  close(): Promise<void>;
}

export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const held: (() => void)[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      fake.requests.push({
        url: request.url ?? '',
        headers: request.headers,
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
      });
      const { mode, reply } = fake;
      const answer = () => {
        if (response.destroyed) return;
        if (mode === 'error') {
          response.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"boom"}}');
          return;
        }
        response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: reply } }] }));
      };
      setTimeout(() => {
        if (fake.hold) held.push(answer);
        else answer();
      }, fake.delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const fake: FakeOpenAI = {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    mode: 'ok',
    delayMs: 0,
    hold: false,
    release: () => {
      fake.hold = false;
      for (const answer of held.splice(0)) answer();
    },
    reply: 'A summary from the fake provider.',
    requests: [],
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}
