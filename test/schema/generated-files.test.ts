/** Committed generated files must match what their generators print now. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { generatedFile, generateOperations } from '../../src/rest/codegen.js';
import { printedSchema, schemaFile } from '../../src/schema/printed.js';

describe('generated files', () => {
  it('schema.graphql is the printed live schema (npm run schema:print)', () => {
    expect(readFileSync(schemaFile, 'utf8')).toBe(printedSchema());
  });

  it('the typed REST operations match schema.graphql (npm run codegen)', async () => {
    expect(readFileSync(generatedFile, 'utf8')).toBe(await generateOperations(readFileSync(schemaFile, 'utf8')));
  });
});
