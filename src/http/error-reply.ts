/**
 * How a documented failure (HttpError) is answered, in one place: its status,
 * its body and, for a 401, its WWW-Authenticate challenge. The plugins with an
 * error handler of their own (credential administration, the write routes)
 * answer their clients' mistakes the same way.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import { type ErrorResponse, errors, HttpError } from '../errors.js';

export function sendHttpError(reply: FastifyReply, error: HttpError): FastifyReply {
  if (error.response.challenge) reply.header('WWW-Authenticate', error.response.challenge);
  if (error.response.retryAfter) reply.header('Retry-After', error.response.retryAfter);
  return reply.status(error.response.status).send(error.response.body);
}

/**
 * The answer to a read that failed with `causes` (an operation's errors): 503
 * with Retry-After when the database did not answer, else `otherwise`.
 */
export function failedRead(causes: readonly unknown[], otherwise: ErrorResponse): HttpError {
  return new HttpError(causes.some(isDatabaseUnavailable) ? errors.serviceUnavailable : otherwise);
}

/**
 * A plugin's error handler: documented failures as such, a client's mistake
 * Fastify found (a body it cannot parse, too large, of another type) as
 * `400..499 { error }`, never a 500; anything else goes on to the app's handler.
 */
export function clientErrorHandler(error: FastifyError, _request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof HttpError) return sendHttpError(reply, error);
  const status = error.statusCode;
  if (status === 413) return sendHttpError(reply, new HttpError(errors.bodyTooLarge));
  if (status && status >= 400 && status < 500) return reply.status(status).send({ error: error.message });
  throw error;
}
