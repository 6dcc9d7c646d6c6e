/**
 * npx tsx bench/fixture-file.ts METRICS FILE
 *
 * Writes a generated fixture of METRICS metrics (test/fixtures/generate.ts) to FILE, for
 * measuring `npm run db:load -- FILE` at scale (docs/performance.md, "Fixture loads").
 */
import { writeFileSync } from 'node:fs';
import { generateFixture } from '../test/fixtures/generate.js';

const [count, file] = process.argv.slice(2);
const metrics = Number(count);
if (!Number.isInteger(metrics) || metrics < 0 || !file) {
  console.error('usage: npx tsx bench/fixture-file.ts METRICS FILE');
  process.exit(2);
}
writeFileSync(file, JSON.stringify(generateFixture(metrics).fixture));
console.log(`${file}: ${metrics} metrics`);
