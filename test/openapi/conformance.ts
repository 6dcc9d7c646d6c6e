/**
 * Checks real responses against the OpenAPI document: the status is
 * documented for the route, the body validates against that status's
 * schema (with every object closed, so an undocumented field fails), and
 * the headers the document names validate, both ways: a header the route
 * sends among those we document is documented for that status.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { expect } from 'vitest';
import type { OpenApiDocument } from '../../src/openapi/document.js';

type Json = Record<string, unknown>;

/** Headers whose presence the document must account for wherever they are sent. */
const DOCUMENTED_HEADERS = [
  'x-request-id',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'retry-after',
  'x-discussion-summary-charged',
  'x-discussion-summary',
  'etag',
  'cache-control',
  'vary',
];

/** Adds `additionalProperties: false` to every object schema that lists its properties. */
export function closeObjects(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(closeObjects);
  if (node === null || typeof node !== 'object') return node;
  const result: Json = {};
  for (const [key, value] of Object.entries(node)) result[key] = closeObjects(value);
  if ('properties' in result && !('additionalProperties' in result)) result.additionalProperties = false;
  return result;
}

export interface ResponseLike {
  statusCode: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}

export function createConformance(document: OpenApiDocument) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajvFormats.default(ajv);
  const components = { schemas: closeObjects(document.components.schemas) };
  const cache = new Map<string, ValidateFunction>();

  function compile(key: string, schema: Json): ValidateFunction {
    let validate = cache.get(key);
    if (!validate) {
      // '#/components/schemas/X' resolves against this root, which carries the components.
      validate = ajv.compile({ ...(closeObjects(schema) as Json), components });
      cache.set(key, validate);
    }
    return validate;
  }

  function deref(node: Json): Json {
    const target = node.$ref;
    if (typeof target !== 'string') return node;
    const [, kind, name] = /^#\/components\/(\w+)\/(.+)$/.exec(target) ?? [];
    const resolved = (document.components as unknown as Record<string, Record<string, Json>>)[kind ?? '']?.[name ?? ''];
    if (!resolved) throw new Error(`unresolved ${target}`);
    return { ...deref(resolved), ...(node.required === undefined ? {} : { required: node.required }) };
  }

  function responseObject(method: string, path: string, status: number): Json {
    const operation = document.paths[path]?.[method.toLowerCase()];
    if (!operation) throw new Error(`${method} ${path} is not in the document`);
    const response = (operation.responses as Record<string, Json>)[String(status)];
    expect(response, `${method} ${path} documents status ${status}`).toBeDefined();
    return deref(response as Json);
  }

  function errorsOf(validate: ValidateFunction) {
    return JSON.stringify(validate.errors, null, 1);
  }

  /** Asserts that `res`, a response of `method path` (the path template), matches the document. */
  function expectConforms(method: string, path: string, res: ResponseLike): void {
    const response = responseObject(method, path, res.statusCode);
    const where = `${method} ${path} ${res.statusCode}`;
    if (response.content === undefined) {
      // No content documented (304): none sent.
      expect(res.body, `${where} has no body`).toBe('');
      expect(res.headers['content-type'], `${where} has no content type`).toBeUndefined();
    } else {
      const media = (response.content as Record<string, Json>)['application/json'];
      expect(media, `${where} has a JSON schema`).toBeDefined();
      expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
      const validate = compile(`${where} body`, media?.schema as Json);
      const body = JSON.parse(res.body);
      expect(validate(body), `${where} body: ${errorsOf(validate)}\n${res.body.slice(0, 2000)}`).toBe(true);
    }

    const documented = Object.fromEntries(
      Object.entries((response.headers as Record<string, Json> | undefined) ?? {}).map(([name, value]) => [
        name.toLowerCase(),
        deref(value),
      ]),
    );
    for (const name of DOCUMENTED_HEADERS) {
      if (res.headers[name] !== undefined) expect(documented[name], `${where} documents header ${name}`).toBeDefined();
    }
    for (const [name, header] of Object.entries(documented)) {
      const value = res.headers[name];
      if (value === undefined) {
        expect(header.required, `${where} sends required header ${name}`).not.toBe(true);
        continue;
      }
      const schema = header.schema as Json;
      const parsed = schema.type === 'integer' ? Number(value) : String(value);
      const validateHeader = compile(`${where} header ${name}`, schema);
      expect(validateHeader(parsed), `${where} header ${name}=${value}: ${errorsOf(validateHeader)}`).toBe(true);
    }
  }

  /** Validates a value against a schema of the document (for its examples). */
  function expectValid(schema: Json, value: unknown, label: string): void {
    const validate = compile(`example ${label}`, schema);
    expect(validate(value), `${label}: ${errorsOf(validate)}`).toBe(true);
  }

  /** Whether `value` validates against `schema` (a schema of the document, or a reference to one). */
  function validates(schema: Json, value: unknown): boolean {
    return compile(`schema ${JSON.stringify(schema)}`, schema)(value) === true;
  }

  /** Asserts that `body`, sent as `mediaType` to `method path` and accepted, is one the document describes. */
  function expectRequestConforms(method: string, path: string, mediaType: string, body: unknown): void {
    const operation = document.paths[path]?.[method.toLowerCase()];
    if (!operation) throw new Error(`${method} ${path} is not in the document`);
    const requestBody = deref(operation.requestBody as Json);
    const media = (requestBody.content as Record<string, Json>)[mediaType];
    expect(media, `${method} ${path} documents a ${mediaType} body`).toBeDefined();
    const validate = compile(`${method} ${path} ${mediaType} request`, media?.schema as Json);
    expect(validate(body), `${method} ${path} request body: ${errorsOf(validate)}`).toBe(true);
  }

  return { expectConforms, expectValid, validates, expectRequestConforms, deref };
}
