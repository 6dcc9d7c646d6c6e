/**
 * The one look of every signed-in page: a header with the organization, its
 * pages, the organization switcher and sign-out, then the page's content.
 * Signed-out pages (sign-in, errors before sign-in) use the same shell
 * without the viewer's parts.
 */
import type { Role } from '../generated/prisma/enums.js';
import { PAGE_SCRIPT, PAGE_STYLESHEET } from './assets.js';
import { type Html, html } from './html.js';

/** The signed-in person a page is shown to, and where they are. */
export interface Viewer {
  email: string;
  displayName: string;
  role: Role;
  org: { slug: string; name: string };
  /** every organization the person may switch to, by name (the current one included) */
  organizations: readonly { slug: string; name: string }[];
  /** the value every form of the page carries in its `csrf` field (src/http/pages/csrf.ts) */
  csrfToken: string;
}

/** Whether the viewer administers the organization (key and token administration, pins, decisions). */
export const isAdmin = (viewer: Viewer) => viewer.role === 'owner' || viewer.role === 'admin';

/** A path of the viewer's organization: `orgPath(viewer, 'metrics')` is `/{slug}/metrics`. */
export function orgPath(viewer: Pick<Viewer, 'org'>, ...segments: string[]): string {
  return ['', viewer.org.slug, ...segments].map(encodeURIComponent).join('/');
}

/** The hidden field every form of a signed-in page carries. */
export function csrfField(viewer: Viewer): Html {
  return html`<input type="hidden" name="csrf" value="${viewer.csrfToken}">`;
}

function header(viewer: Viewer): Html {
  const others = viewer.organizations.filter((o) => o.slug !== viewer.org.slug);
  return html`<header class="top">
  <nav aria-label="Organization">
    <ul>
      <li><a href="${orgPath(viewer)}"><strong>${viewer.org.name}</strong></a></li>
      <li><a href="${orgPath(viewer, 'metrics')}">Metrics</a></li>
      ${isAdmin(viewer) ? html`<li><a href="${orgPath(viewer, 'settings')}">Keys and tokens</a></li>` : ''}
      <li><a href="/docs">API reference</a></li>
    </ul>
  </nav>
  <div class="who">
    ${
      others.length > 0
        ? html`<details><summary>Switch organization</summary><ul>${others.map(
            (o) => html`<li><a href="/${encodeURIComponent(o.slug)}">${o.name}</a></li>`,
          )}</ul></details>`
        : ''
    }
    <span>${viewer.displayName || viewer.email} (${viewer.role})</span>
    <form method="post" action="/sign-out">${csrfField(viewer)}<button type="submit">Sign out</button></form>
  </div>
</header>`;
}

export interface PageInput {
  /** the page's own title (the document's title adds the product's name) */
  title: string;
  /** absent on signed-out pages */
  viewer?: Viewer;
  main: Html;
}

/** A whole HTML document. */
export function layout({ title, viewer, main }: PageInput): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title} · Metric Governance</title>
<link rel="stylesheet" href="${PAGE_STYLESHEET.path}">
<script src="${PAGE_SCRIPT.path}" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
${viewer ? header(viewer) : html`<header class="top"><strong>Metric Governance</strong></header>`}
<main id="main">
${main}
</main>
</body>
</html>`;
}

/** A page that says what went wrong (404, 429, a refused sign-in), in the same look. */
export function messagePage(title: string, message: Html | string, viewer?: Viewer): Html {
  return layout({ title, viewer, main: html`<h1>${title}</h1><p>${message}</p>` });
}
