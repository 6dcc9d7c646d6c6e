/** The printed schema, shared by the generator script and its staleness test. */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lexicographicSortSchema, printSchema } from 'graphql';
import { schema } from './index.js';

export const schemaFile = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'schema.graphql');

export function printedSchema(): string {
  return `${printSchema(lexicographicSortSchema(schema))}\n`;
}
