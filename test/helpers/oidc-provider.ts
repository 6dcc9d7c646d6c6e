/**
 * A real OpenID Connect provider (oidc-provider) on a free port of
 * 127.0.0.1, with one confidential client (client_secret_post, PKCE
 * required) whose redirect URI is the app's callback, and its built-in login
 * form (devInteractions): the login typed there is the account, whose email
 * claims `accounts` gives. `signInAtProvider` walks its pages over fetch as a
 * browser would.
 */
import { createServer, type Server } from 'node:http';
import Provider, { type FindAccount } from 'oidc-provider';
import type { OidcSettings } from '../../src/auth/oidc.js';
import { freePort } from './ports.js';

export interface ProviderAccount {
  email?: string;
  email_verified?: boolean;
}

export interface TestProvider {
  settings: OidcSettings;
  close(): Promise<void>;
}

export async function startOidcProvider(
  redirectUri: string,
  accounts: Record<string, ProviderAccount>,
): Promise<TestProvider> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const settings = { issuer, clientId: 'catalog', clientSecret: 'a-client-secret-of-the-tests-0123456789' };
  const findAccount: FindAccount = async (_ctx, sub) => {
    const account = accounts[sub];
    return account ? { accountId: sub, claims: async () => ({ sub, ...account }) } : undefined;
  };
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: settings.clientId,
        client_secret: settings.clientSecret,
        redirect_uris: [redirectUri],
        token_endpoint_auth_method: 'client_secret_post',
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    pkce: { required: () => true },
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    cookies: { keys: ['test-cookie-key-0123456789abcdef'] },
    features: { devInteractions: { enabled: true } },
    findAccount,
  });
  const server: Server = createServer(provider.callback());
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    settings,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Cookies by name, as a browser keeps them for one host (paths ignored: the provider's only). */
class Jar {
  private readonly cookies = new Map<string, string>();
  take(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const at = pair.indexOf('=');
      const name = pair.slice(0, at).trim();
      const value = pair.slice(at + 1).trim();
      if (!value || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }
}

/**
 * Follows the authorization URL through the provider's login and consent
 * forms, signing in as `login`; resolves to the URL the provider sends the
 * browser back to (the app's callback with code and state).
 */
export async function signInAtProvider(authorizationUrl: string, login: string): Promise<string> {
  const jar = new Jar();
  const origin = new URL(authorizationUrl).origin;
  let url = authorizationUrl;
  let init: RequestInit = {};
  for (let step = 0; step < 20; step++) {
    const response = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), cookie: jar.header() },
    });
    jar.take(response);
    init = {};
    const location = response.headers.get('location');
    if (location) {
      const next = new URL(location, url);
      if (next.origin !== origin) return next.href;
      url = next.href;
      continue;
    }
    const page = await response.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(page)?.[1];
    const prompt = /name="prompt" value="([^"]+)"/.exec(page)?.[1];
    if (response.status !== 200 || !action || !prompt) throw new Error(`provider answered ${response.status}: ${page}`);
    url = new URL(action.replaceAll('&amp;', '&'), url).href;
    const fields: Record<string, string> = prompt === 'login' ? { prompt, login, password: 'any' } : { prompt };
    init = {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    };
  }
  throw new Error('the provider did not send the browser back');
}
