import type { FastifyRequest } from 'fastify';

/** A request header's value; a repeated header counts with its first value. */
export function firstHeader(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
