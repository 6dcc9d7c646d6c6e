/**
 * A discussion body or note as HTML: its Markdown formatting (emphasis,
 * lists, links, code) rendered, and any raw HTML in it shown as text,
 * escaped, never as markup (markdown-it with `html: false`). Links keep to
 * http(s) and mailto (markdown-it refuses `javascript:` and the like), and
 * open nothing with the page's privileges (`rel="nofollow noopener noreferrer"`).
 */
import MarkdownIt from 'markdown-it';
import { type Html, trusted } from './html.js';

const markdown = new MarkdownIt({ html: false, linkify: true, typographer: false });
const SAFE_LINK = /^(https?:|mailto:)/i;
markdown.validateLink = (url: string) => SAFE_LINK.test(url.trim());

const renderToken = markdown.renderer.renderToken.bind(markdown.renderer);
markdown.renderer.rules.link_open = (tokens, index, options) => {
  tokens[index]?.attrSet('rel', 'nofollow noopener noreferrer');
  return renderToken(tokens, index, options);
};

/** The body rendered (block level: paragraphs, lists, code blocks). */
export function renderMarkdown(body: string): Html {
  return trusted(markdown.render(body));
}
