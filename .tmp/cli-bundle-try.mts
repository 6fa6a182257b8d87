import { build } from 'esbuild';
import path from 'node:path';
import { sourceUrls } from '../scripts/esbuild-plugins';
const root = process.cwd();
const out = path.join(root, '.keel', 'cli-try');
await build({
  entryPoints: { cli: 'client/cli.ts' },
  absWorkingDir: root, outdir: out, bundle: true, platform: 'node', format: 'esm', splitting: true, target: 'node20',
  external: ['@temporalio/*', 'esbuild', '@swc/*', 'webpack', 'pg-native', 'playwright-core', 'chromium-bidi', 'fsevents'],
  banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  sourcemap: true, logLevel: 'warning', plugins: [sourceUrls()], metafile: false,
});
console.log('built');
