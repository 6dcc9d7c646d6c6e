/**
 * Sign-in with an OpenID Connect provider (docs/sign-in.md): the
 * authorization code flow with PKCE (S256), state and nonce, through
 * openid-client. The provider's metadata is discovered on the first sign-in,
 * not at start, so a provider that is down stops sign-ins only (a page says
 * so), never the service; a failed discovery is tried again next time.
 */
import * as client from 'openid-client';
import type { SignInState } from './oidc-state.js';

/** OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET. */
export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret: string;
}

/** The path the provider sends the browser back to, after PUBLIC_APP_URL. */
export const OIDC_CALLBACK_PATH = '/sign-in/oidc/callback';

/** What the provider says of the person who signed in. */
export interface ProviderIdentity {
  email: string | null;
  emailVerified: boolean;
}

/** The provider could not be reached, or its metadata read: sign-in is unavailable for now. */
export class ProviderUnavailable extends Error {}

/** The provider's answer was refused (its error, a state that does not match, a bad token). */
export class SignInFailed extends Error {}

export interface OidcClient {
  /** the provider as the sign-in page names it: its issuer's host */
  providerName: string;
  /** Where to send the browser, and what to remember until it comes back. */
  start(next: string | null): Promise<{ url: URL; remembered: SignInState }>;
  /** The identity of the return at `callbackQuery` (the callback's query string), checked against `remembered`. */
  finish(callbackQuery: string, remembered: SignInState): Promise<ProviderIdentity>;
}

const isHttp = (issuer: string) => new URL(issuer).protocol === 'http:';

/** A client of the provider, for the redirect URI `{publicAppUrl}/sign-in/oidc/callback`. */
export function oidcClient(settings: OidcSettings, publicAppUrl: string): OidcClient {
  const redirectUri = new URL(OIDC_CALLBACK_PATH, publicAppUrl).href;
  let discovered: Promise<client.Configuration> | null = null;
  const configuration = () => {
    discovered ??= client
      .discovery(new URL(settings.issuer), settings.clientId, settings.clientSecret, undefined, {
        // An http:// issuer (a provider on this machine, in tests) is refused by openid-client unless allowed.
        execute: isHttp(settings.issuer) ? [client.allowInsecureRequests] : [],
        timeout: 10,
      })
      .catch((error: unknown) => {
        discovered = null;
        throw new ProviderUnavailable(`the sign-in provider could not be reached (${(error as Error).message})`);
      });
    return discovered;
  };

  return {
    providerName: new URL(settings.issuer).host,
    async start(next) {
      const config = await configuration();
      const remembered: SignInState = {
        state: client.randomState(),
        nonce: client.randomNonce(),
        codeVerifier: client.randomPKCECodeVerifier(),
        next,
      };
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: 'openid email profile',
        code_challenge: await client.calculatePKCECodeChallenge(remembered.codeVerifier),
        code_challenge_method: 'S256',
        state: remembered.state,
        nonce: remembered.nonce,
      });
      return { url, remembered };
    },
    async finish(callbackQuery, remembered) {
      const config = await configuration();
      // The URL the provider redirected to, built from our redirect URI (never from the request's
      // Host header) plus the query it came back with; openid-client sends its path as redirect_uri.
      const current = new URL(redirectUri);
      current.search = callbackQuery;
      let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
      try {
        tokens = await client.authorizationCodeGrant(config, current, {
          pkceCodeVerifier: remembered.codeVerifier,
          expectedState: remembered.state,
          expectedNonce: remembered.nonce,
          idTokenExpected: true,
        });
      } catch (error) {
        throw failure(error);
      }
      const claims = tokens.claims();
      if (!claims) throw new SignInFailed('the provider sent no ID token');
      if (typeof claims.email === 'string' && claims.email_verified === true) {
        return { email: claims.email, emailVerified: true };
      }
      // Not in the ID token (many providers put email in userinfo only): ask userinfo, for this subject.
      try {
        const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
        const email =
          typeof info.email === 'string' ? info.email : typeof claims.email === 'string' ? claims.email : null;
        return { email, emailVerified: info.email_verified === true || claims.email_verified === true };
      } catch (error) {
        throw failure(error);
      }
    },
  };
}

/** A network failure is the provider's unavailability; anything else a refused answer. */
function failure(error: unknown): Error {
  const message = (error as Error)?.message ?? String(error);
  if (error instanceof TypeError && /fetch failed/i.test(message)) return new ProviderUnavailable(message);
  if ((error as { name?: string })?.name === 'TimeoutError') return new ProviderUnavailable(message);
  const code = (error as { error?: unknown }).error;
  return new SignInFailed(typeof code === 'string' ? `${code}: ${message}` : message);
}
