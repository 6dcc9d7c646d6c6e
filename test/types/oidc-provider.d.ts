/** What the tests use of oidc-provider, which ships no type declarations. */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface Account {
    accountId: string;
    claims(): Promise<Record<string, unknown>>;
  }

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (request: IncomingMessage, response: ServerResponse) => void;
  }

  export type FindAccount = (ctx: unknown, sub: string) => Promise<Account | undefined>;
}
