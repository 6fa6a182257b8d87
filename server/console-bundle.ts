// The console's script: server/console/src (TypeScript, Preact + htm) bundled by esbuild
// when the server starts, in memory (about 40 KB, a few tens of ms). Bundling at start
// rather than at install keeps `npm ci` the only step: no build output to forget or to
// drift from its sources; esbuild is a dependency already (tsx runs on it).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';

const entry = path.join(path.dirname(fileURLToPath(import.meta.url)), 'console', 'src', 'main.ts');

let cached: string | null = null;

export function consoleScript(): string {
  if (cached !== null) return cached;
  const out = buildSync({
    entryPoints: [entry],
    bundle: true,
    format: 'esm',
    target: 'es2022',
    platform: 'browser',
    minify: true,
    legalComments: 'none',
    write: false,
    logLevel: 'silent',
  });
  cached = out.outputFiles[0]!.text;
  return cached;
}
