/**
 * A request body's bytes as text, strictly: bytes that are not UTF-8 are
 * refused (400) rather than read as U+FFFD, so nothing is stored other than
 * what was sent.
 */
import { errors, HttpError } from '../errors.js';

const decoder = new TextDecoder('utf-8', { fatal: true });

export function utf8Body(body: Buffer): string {
  try {
    return decoder.decode(body);
  } catch {
    throw new HttpError(errors.bodyNotUtf8);
  }
}
