/**
 * The catalog's one stylesheet and one small script: served as versioned
 * files (their names carry their content's hash, so a browser keeps them),
 * never inline, so the pages' Content-Security-Policy needs no
 * `unsafe-inline`. The pages work without the script; it only enhances.
 */
import { createHash } from 'node:crypto';

/** Where the catalog's files are served. */
export const PAGE_ASSETS_PATH = '/assets';

const STYLES = `
:root { color-scheme: light; --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --bg: #fff; --soft: #f6f8fa;
  --link: #0a58ca; --ok: #116329; --warn: #7d4e00; --bad: #a40e26; --focus: #0a58ca; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--link); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible, summary:focus-visible {
  outline: 3px solid var(--focus); outline-offset: 2px; }
.skip { position: absolute; left: -10000px; top: 0; }
.skip:focus { left: 8px; top: 8px; background: var(--bg); padding: 4px 8px; z-index: 10; }
.top { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 16px; padding: 8px 16px; border-bottom: 1px solid var(--line); background: var(--soft); }
.top nav ul { display: flex; flex-wrap: wrap; gap: 4px 16px; list-style: none; margin: 0; padding: 0; }
.top .who { margin-left: auto; display: flex; flex-wrap: wrap; align-items: center; gap: 8px; color: var(--muted); font-size: 14px; }
.top form { margin: 0; }
main { max-width: 72rem; margin: 0 auto; padding: 16px; }
h1 { font-size: 1.6rem; line-height: 1.25; margin: 8px 0 12px; overflow-wrap: anywhere; }
h2 { font-size: 1.2rem; margin: 24px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 1rem; margin: 16px 0 4px; }
p, li, td, th, dd { overflow-wrap: anywhere; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
.table-wrap { overflow-x: auto; }
pre, code { font: 14px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { background: var(--soft); border: 1px solid var(--line); padding: 8px; overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
@media (max-width: 40rem) { dl.facts { grid-template-columns: 1fr; } dl.facts dd { margin-bottom: 8px; } }
.muted { color: var(--muted); }
.badge { display: inline-block; padding: 0 8px; border-radius: 12px; border: 1px solid currentColor; font-size: 14px; white-space: nowrap; }
.verdict-use { color: var(--ok); } .verdict-use_with_caution { color: var(--warn); } .verdict-do_not_use { color: var(--bad); }
.layout { display: grid; grid-template-columns: 16rem 1fr; gap: 24px; }
@media (max-width: 48rem) { .layout { grid-template-columns: 1fr; } }
fieldset { border: 1px solid var(--line); margin: 0 0 12px; padding: 8px; }
label { display: block; font-weight: 600; margin: 8px 0 2px; }
input[type=text], input[type=search], input[type=email], select, textarea { width: 100%; max-width: 40rem; font: inherit; padding: 6px 8px; border: 1px solid #8c959f; border-radius: 4px; background: var(--bg); color: var(--fg); }
textarea { min-height: 8rem; }
button { font: inherit; padding: 6px 12px; border: 1px solid #8c959f; border-radius: 4px; background: var(--soft); color: var(--fg); cursor: pointer; }
button.primary { background: #0a58ca; border-color: #0a58ca; color: #fff; }
.pagination { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; margin: 16px 0; }
.notice { border-left: 4px solid var(--warn); background: #fff8e6; padding: 8px 12px; }
.error { border-left: 4px solid var(--bad); background: #ffebe9; padding: 8px 12px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(12rem, 1fr)); gap: 12px; padding: 0; list-style: none; }
.cards li { border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; }
.message { border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; margin: 8px 0; }
.message .body > :first-child { margin-top: 0; } .message .body > :last-child { margin-bottom: 0; }
/* catalog: the facet form, page links, the home's changes */
.catalog-filters { display: grid; grid-template-columns: repeat(auto-fill, minmax(12rem, 1fr)); gap: 0 16px; align-items: end; margin-bottom: 8px; }
.catalog-filters .facet-search { grid-column: 1 / -1; }
.catalog-filters .facet-actions { display: flex; gap: 16px; align-items: center; padding: 8px 0; }
.pagination .pages { display: flex; flex-wrap: wrap; gap: 4px 12px; list-style: none; margin: 0; padding: 0; }
.pagination a[aria-current=page] { font-weight: 700; text-decoration: none; }
.changes time { color: var(--muted); font-size: 14px; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
/* auth part: the sign-in page's provider link looks like the primary button it acts as */
a.button { display: inline-block; padding: 6px 12px; border-radius: 4px; text-decoration: none; }
a.button.primary { background: #0a58ca; color: #fff; }
/* metric page */
.toc { border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; margin: 16px 0; }
.toc .toc-title { font-size: 1rem; margin: 0 0 4px; border: 0; padding: 0; }
.toc ol { margin: 0; padding-left: 1.5rem; columns: 2 14rem; }
.reasons li { margin: 4px 0; }
.timeline { list-style: none; padding: 0; margin: 0; }
.timeline li { border-left: 3px solid var(--line); padding: 4px 0 8px 12px; }
.timeline li p { margin: 4px 0 0; }
.run-passed { color: var(--ok); } .run-failed { color: var(--bad); }
.actions { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; }
.threads li { margin: 4px 0; }
.compare select { max-width: 20rem; }
pre.diff { white-space: pre-wrap; }
.diff-removed { color: var(--bad); background: #ffebe9; } .diff-added { color: var(--ok); background: #dafbe1; }
/* discussion forms: threads, messages, challenges */
ol.messages { list-style: none; margin: 0; padding: 0; }
.message-by { font-size: 1rem; font-weight: 600; margin: 0 0 4px; overflow-wrap: anywhere; }
.message .actions { display: flex; flex-wrap: wrap; gap: 8px 12px; align-items: center; margin-top: 8px; }
form.inline { display: inline-block; margin: 4px 0; }
.field .hint { font-size: 14px; margin: 2px 0 0; }
.field .error { margin: 4px 0; }
.reason { white-space: pre-wrap; }
.badge.pinned { color: var(--ok); white-space: normal; }
`;

const SCRIPT = `(function () {
  // A facet or sort menu applies itself when chosen; without the script its form's button does.
  document.querySelectorAll('form[data-autosubmit] select').forEach(function (select) {
    select.addEventListener('change', function () { select.form.requestSubmit(); });
  });
})();
`;

export interface PageAsset {
  path: string;
  content: string;
  contentType: string;
}

function versioned(name: string, extension: string, content: string, contentType: string): PageAsset {
  const version = createHash('sha256').update(content).digest('hex').slice(0, 16);
  return { path: `${PAGE_ASSETS_PATH}/${name}.${version}.${extension}`, content, contentType };
}

export const PAGE_STYLESHEET = versioned('catalog', 'css', STYLES, 'text/css; charset=utf-8');
export const PAGE_SCRIPT = versioned('catalog', 'js', SCRIPT, 'application/javascript; charset=utf-8');
