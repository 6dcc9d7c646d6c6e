/**
 * A request body's bytes as text, strictly: bytes that are not UTF-8 are
 * refused (400) rather than read as U+FFFD, so nothing is stored other than
 * what was sent.
 */
import type { FastifyInstance } from 'fastify';
import { errors, HttpError } from '../errors.js';

const decoder = new TextDecoder('utf-8', { fatal: true });

export function utf8Body(body: Buffer): string {
  try {
    return decoder.decode(body);
  } catch {
    throw new HttpError(errors.bodyNotUtf8);
  }
}

/**
 * JSON bodies of a plugin's routes decoded as strict UTF-8 ({@link utf8Body}),
 * then parsed as Fastify parses JSON (prototype poisoning refused): text
 * with bytes that are not UTF-8 is refused, never stored with U+FFFD in place
 * of what was sent.
 */
export function strictJsonBodies(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    let text: string;
    try {
      text = utf8Body(body as Buffer);
    } catch (error) {
      done(error as HttpError, undefined);
      return;
    }
    void parseJson(request, text, done);
  });
}
