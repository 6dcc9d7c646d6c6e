/**
 * Reference Objects of the OpenAPI document carry nothing beside `$ref` but
 * what OpenAPI 3.1 lets them (`summary`, `description`): anything else there
 * (a `required: true` beside a header's `$ref`, say) is ignored by every
 * tool. The required headers say so in their components.
 */
import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/openapi/document.js';

const document = openApiDocument() as unknown as Record<string, unknown>;

/** Every object holding `$ref`, with its path in the document. */
function references(node: unknown, path = '#'): { path: string; keys: string[] }[] {
  if (Array.isArray(node)) return node.flatMap((item, i) => references(item, `${path}/${i}`));
  if (node === null || typeof node !== 'object') return [];
  const entries = Object.entries(node);
  const own = '$ref' in node ? [{ path, keys: Object.keys(node) }] : [];
  return [...own, ...entries.flatMap(([key, value]) => references(value, `${path}/${key}`))];
}

describe('OpenAPI references', () => {
  it('no Reference Object has a sibling other than summary and description', () => {
    const all = references(document);
    expect(all.length).toBeGreaterThan(50);
    const withSiblings = all.filter(({ keys }) => keys.some((k) => !['$ref', 'summary', 'description'].includes(k)));
    expect(withSiblings).toEqual([]);
  });

  it('the headers every response listing them sends are required in their components', () => {
    const components = (document.components as { headers: Record<string, { required?: boolean }> }).headers;
    const required = Object.entries(components)
      .filter(([, header]) => header.required === true)
      .map(([name]) => name)
      .sort();
    expect(required).toEqual(['Cache-Control', 'ETag', 'Retry-After', 'Vary', 'WWW-Authenticate']);
  });
});
