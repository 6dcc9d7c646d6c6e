/**
 * `npm run build`, run at install (after `prisma generate`) and before every
 * `npm start`: compiles src/ with esbuild (one .js per .ts, no bundling) and
 * makes `dist` point at the result, without ever touching a build that an
 * instance may be running from.
 *
 * - Each build goes into `.dist-<hash>/` at the project root, the hash taken
 *   over every file of src/ (the generated Prisma client included), the
 *   esbuild version and this script. Same sources, same directory: a start
 *   with nothing changed compiles nothing and changes nothing.
 * - A new build is compiled into a temporary directory and renamed into
 *   place; `dist` is a symlink swapped by rename, so it always names a
 *   complete build, never a half-written or deleted one.
 * - Builds that are neither the current nor the previous target of `dist`
 *   are removed. An instance loads every module of its build when it starts.
 *
 * Plain JavaScript so that it runs at install without a TypeScript loader.
 */
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, version } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
const link = join(root, 'dist');
const PREFIX = '.dist-';

const options = {
  entryPoints: ['src/**/*.ts'],
  platform: 'node',
  format: 'esm',
  target: 'node22',
  sourcemap: true,
  logLevel: 'warning',
};

function sourceHash() {
  const hash = createHash('sha256');
  hash.update(`esbuild ${version}\n${JSON.stringify(options)}\n`);
  hash.update(readFileSync(fileURLToPath(import.meta.url)));
  const files = readdirSync(src, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(root, join(entry.parentPath, entry.name)))
    .sort();
  for (const file of files) {
    hash.update(`\0${file}\0`);
    hash.update(readFileSync(join(root, file)));
  }
  return hash.digest('hex').slice(0, 16);
}

/** What `dist` points at now (a name in the project root), null if nothing, 'directory' for an old-style dist/. */
function currentTarget() {
  try {
    const stat = lstatSync(link);
    if (stat.isSymbolicLink()) return readlinkSync(link);
    return 'directory';
  } catch {
    return null;
  }
}

function exists(path) {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

const name = `${PREFIX}${sourceHash()}`;
const before = currentTarget();
if (before === name && exists(join(root, name, 'server.js'))) {
  console.log(`build: dist is up to date (${name})`);
  process.exit(0);
}

const compile = !exists(join(root, name, 'server.js'));
if (compile) {
  const temporary = join(root, `${name}.tmp-${process.pid}`);
  rmSync(temporary, { recursive: true, force: true });
  await build({ ...options, absWorkingDir: root, outdir: temporary });
  try {
    renameSync(temporary, join(root, name));
  } catch (error) {
    // Another start built the same sources at the same time: its build is as good.
    if (!['ENOTEMPTY', 'EEXIST'].includes(error.code)) throw error;
    rmSync(temporary, { recursive: true, force: true });
  }
}

// An old-style dist/ directory: moved aside whole (a rename), removed by a later build.
let previous = before;
if (before === 'directory') {
  previous = `${PREFIX}previous-${process.pid}`;
  try {
    renameSync(link, join(root, previous));
  } catch (error) {
    if (error.code !== 'ENOENT') throw error;
  }
}
const temporaryLink = join(root, `dist.tmp-${process.pid}`);
rmSync(temporaryLink, { force: true });
symlinkSync(name, temporaryLink, 'dir');
renameSync(temporaryLink, link);
console.log(`build: ${compile ? 'compiled src/ into' : 'reused'} ${name}; dist -> ${name}`);

// Keep the current build and the one dist named before; remove older ones.
const keep = new Set([name, previous]);
for (const entry of readdirSync(root)) {
  if (entry.startsWith(PREFIX) && !entry.includes('.tmp-') && !keep.has(entry)) {
    rmSync(join(root, entry), { recursive: true, force: true });
  }
}
