/** `npm run codegen`: regenerates src/rest/operations.generated.ts from schema.graphql. */
import { readFileSync, writeFileSync } from 'node:fs';
import { generatedFile, generateOperations } from '../src/rest/codegen.js';
import { schemaFile } from '../src/schema/printed.js';

writeFileSync(generatedFile, await generateOperations(readFileSync(schemaFile, 'utf8')));
console.log(`wrote ${generatedFile}`);
