/**
 * The signed-out pages of sign-in (docs/sign-in.md): the sign-in page, a
 * one-time link's confirmation, and the refusals, each saying what to do next.
 */
import { type Html, html } from './html.js';
import { layout } from './layout.js';

const LINK_COMMAND = 'npm run cli -- login:link --org ORG --email EMAIL';
const ADD_COMMAND = 'npm run cli -- user:add --org ORG --email EMAIL --name NAME --role member';

const withNext = (path: string, next: string | null) => (next ? `${path}?next=${encodeURIComponent(next)}` : path);

function askForLink(): Html {
  return html`<p>An administrator of your organization can print a sign-in link for you, valid once for 15 minutes:</p>
<pre><code>${LINK_COMMAND}</code></pre>`;
}

export function signInPage(providerName: string | null, next: string | null): Html {
  const provider = providerName
    ? html`<p><a class="button primary" href="${withNext('/sign-in/oidc', next)}">Sign in with ${providerName}</a></p>
<h2>Or with a one-time link</h2>`
    : html`<h2>With a one-time link</h2>`;
  return layout({
    title: 'Sign in',
    main: html`<h1>Sign in</h1>
${provider}
${askForLink()}`,
  });
}

/** A one-time link opened: a button spends it, so that a mail scanner's visit does not. */
export function linkPage(token: string, next: string | null): Html {
  return layout({
    title: 'Sign in',
    main: html`<h1>Sign in</h1>
<p>This link signs you in once. Continue to sign in in this browser.</p>
<form method="post" action="/sign-in/link">
<input type="hidden" name="token" value="${token}">
${next ? html`<input type="hidden" name="next" value="${next}">` : ''}
<button class="primary" type="submit">Sign in</button>
</form>`,
  });
}

export function linkRefusedPage(): Html {
  return layout({
    title: 'This sign-in link cannot be used',
    main: html`<h1>This sign-in link cannot be used</h1>
<p>It was used already, has expired (a link is valid for 15 minutes), or was never issued. Nothing was changed.</p>
${askForLink()}
<p><a href="/sign-in">Back to sign-in</a></p>`,
  });
}

/** The provider signed someone in whom no organization here knows (or whose email it has not verified). */
export function notAMemberPage(email: string | null, verified: boolean): Html {
  const why = !email
    ? html`<p>The sign-in provider did not say which email address you signed in with.</p>`
    : verified
      ? html`<p>No organization here has a member with the email address <strong>${email}</strong>.</p>`
      : html`<p>The sign-in provider has not verified the email address <strong>${email}</strong>, so it cannot
identify you here. Verify it with the provider, then sign in again.</p>`;
  return layout({
    title: 'You cannot sign in here yet',
    main: html`<h1>You cannot sign in here yet</h1>
${why}
<p>Ask an administrator of your organization to add you as a member, with your verified email address:</p>
<pre><code>${ADD_COMMAND}</code></pre>
<p><a href="/sign-in">Back to sign-in</a></p>`,
  });
}
