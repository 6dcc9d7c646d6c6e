/**
 * The refusals of a discussion read or write (HttpError of the error
 * catalogue, src/errors.ts) as GraphQL errors: the catalogue's message and a
 * code for the status (a rate limit or a busy registry also its HTTP status
 * and Retry-After). The error keeps the catalogue's response, from which the
 * REST routes that run these operations answer the same status and body
 * (src/http/discussion-routes.ts). It has no `originalError`: yoga masks an
 * error that has one that is not a GraphQL error.
 */
import { GraphQLError } from 'graphql';
import { type ErrorResponse, HttpError } from '../errors.js';

const CODES: Record<number, string> = {
  400: 'BAD_USER_INPUT',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  409: 'CONFLICT',
  429: 'RATE_LIMITED',
  503: 'SERVICE_UNAVAILABLE',
};

export class DiscussionGraphQLError extends GraphQLError {
  constructor(readonly response: ErrorResponse) {
    const { status, retryAfter } = response;
    super(new HttpError(response).message, {
      extensions: {
        code: CODES[status] ?? 'INTERNAL_SERVER_ERROR',
        ...(retryAfter ? { http: { status, headers: { 'Retry-After': String(retryAfter) } } } : {}),
      },
    });
  }
}

export function discussionGraphQLError(error: unknown): unknown {
  return error instanceof HttpError ? new DiscussionGraphQLError(error.response) : error;
}

/** Runs a discussion resolver, its refusals as GraphQL errors. */
export async function discussionResolver<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw discussionGraphQLError(error);
  }
}

/** The catalogue's response behind an operation's error (however the executor wrapped it), if any. */
export function discussionRefusal(error: unknown): ErrorResponse | null {
  for (let cause = error, depth = 0; cause && depth < 5; depth++) {
    if (cause instanceof DiscussionGraphQLError) return cause.response;
    if (cause instanceof HttpError) return cause.response;
    cause = (cause as { originalError?: unknown }).originalError;
  }
  return null;
}
