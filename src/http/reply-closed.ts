import type { FastifyReply } from 'fastify';

/**
 * A signal that aborts when the response closes: the client went away, or
 * an answer was sent (the handler deadline's included). Not
 * `request.signal`: Fastify aborts that on the request's `close`, which Node
 * emits as soon as the request body has been read, so a route with a body
 * would find it aborted before its work starts.
 */
export function untilReplyCloses(reply: FastifyReply): AbortSignal {
  const closed = new AbortController();
  reply.raw.once('close', () => closed.abort());
  return closed.signal;
}
