// The console's script: server/console/src (Preact components in .tsx, type-checked by `npm
// run typecheck`) compiled by esbuild into dist/console/app.js, the file `keel serve` serves.
// `npm run build` writes it (scripts/build.ts). The README's commands never run the build
// (`npm ci && npm test`, `npm ci && npm run demo`), so a checkout builds it on demand: when
// the file is missing or older than a source file, the server builds it at start (about
// 40 KB, a few tens of ms) with esbuild, a devDependency, and writes it for the next start.
// An install without devDependencies cannot, and says to run `npm run build` where they are.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as Esbuild from 'esbuild';

declare const __KEEL_COMPILED__: boolean | undefined;

const here = path.dirname(fileURLToPath(import.meta.url));
// From source: server/ is in the root. Compiled (dist/server/serve.js, scripts/build.ts): two up.
const root = path.resolve(here, typeof __KEEL_COMPILED__ === 'undefined' ? '..' : '../..');
const sources = path.join(here, 'console', 'src');

/** Where `npm run build` (and a build on demand) writes the console's script. */
export const CONSOLE_SCRIPT_FILE = path.join(root, 'dist', 'console', 'app.js');

/** esbuild's options for the console, shared by `npm run build` and the build on demand. */
export const consoleBuildOptions = (outfile: string): Esbuild.BuildOptions => ({
  entryPoints: [path.join(sources, 'main.tsx')],
  outfile,
  bundle: true,
  format: 'esm',
  target: 'es2022',
  platform: 'browser',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  minify: true,
  legalComments: 'none',
  logLevel: 'silent',
});

const mtime = (file: string): number | null => {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return null;
  }
};

/** The newest modification time among the console's sources (null where they are not shipped). */
function newestSource(): number | null {
  let entries: string[];
  try {
    entries = readdirSync(sources, { recursive: true, encoding: 'utf8' });
  } catch {
    return null;
  }
  return Math.max(...entries.map((f) => mtime(path.join(sources, f)) ?? 0));
}

/** Builds the console now and writes it to `file` (esbuild loaded only here: it is a devDependency); returns the script. */
function buildOnDemand(file: string): string {
  let esbuild: typeof Esbuild;
  try {
    esbuild = createRequire(import.meta.url)('esbuild') as typeof Esbuild;
  } catch {
    throw new Error(`the web console is not built (${path.relative(root, file)}) and esbuild is not installed to build it: run \`npm run build\` in a checkout with its devDependencies`);
  }
  const script = esbuild.buildSync({ ...consoleBuildOptions(file), write: false }).outputFiles[0]!.text;
  // Written beside and renamed into place: servers starting together (parallel tests) each
  // build it, and none reads another's half-written file. A server that may not write there
  // (another user's checkout) serves what it built.
  const temp = `${file}.${process.pid}.${Date.now()}.tmp`;
  try {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(temp, script);
    renameSync(temp, file);
  } catch {
    rmSync(temp, { force: true });
  }
  return script;
}

let cached: string | null = null;

/** The console's script, built first if it is missing or older than its sources. */
export function consoleScript(): string {
  if (cached !== null) return cached;
  const built = mtime(CONSOLE_SCRIPT_FILE);
  const newest = newestSource();
  cached = built === null || (newest !== null && newest > built) ? buildOnDemand(CONSOLE_SCRIPT_FILE) : readFileSync(CONSOLE_SCRIPT_FILE, 'utf8');
  return cached;
}
