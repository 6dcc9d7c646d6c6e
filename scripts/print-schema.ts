/** `npm run schema:print`: writes the printed GraphQL schema to schema.graphql. */
import { writeFileSync } from 'node:fs';
import { printedSchema, schemaFile } from '../src/schema/printed.js';

writeFileSync(schemaFile, printedSchema());
console.log(`wrote ${schemaFile}`);
