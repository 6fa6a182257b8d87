// esbuild plugins shared by `npm run build` (scripts/build.ts) and the tests' compiled CLI
// (test/fixtures/compiled-cli.ts).
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Plugin } from 'esbuild';

/** `pkg/sub/path` as Node's ESM loader must see it: with `.js` when the package has no exports map. */
function esmSpecifier(root: string, spec: string): string {
  if (spec.startsWith('node:')) return spec;
  const parts = spec.split('/');
  const name = spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
  const dir = path.join(root, 'node_modules', name);
  const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { exports?: unknown };
  if (manifest.exports !== undefined || path.extname(spec) !== '') return spec;
  return existsSync(path.join(root, 'node_modules', `${spec}.js`)) ? `${spec}.js` : spec;
}

/**
 * Node's ESM loader needs the file name of a subpath that a package does not export by name
 * (`picomatch/posix`, `@temporalio/common/lib/time`); tsx and bundlers resolve it without.
 * Such imports get their `.js`.
 */
export function esmSubpaths(root: string): Plugin {
  return {
    name: 'esm-subpaths',
    setup(b) {
      b.onResolve({ filter: /^(@[^/]+\/)?[^./][^/]*\/.+/ }, ({ path: spec }) => ({ path: esmSpecifier(root, spec), external: true }));
    },
  };
}

/**
 * Each of Keel's modules keeps its own `import.meta.url` (its source file), so paths it
 * derives from it (workflows/, server/console/, scripts/) are the source's wherever the
 * bundle is written: the bundled code finds what the same code run by tsx finds.
 */
export function sourceUrls(): Plugin {
  return {
    name: 'source-import-meta-url',
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, async ({ path: file }) => {
        if (file.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
        const source = await readFile(file, 'utf8');
        return { contents: source.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(file).href)), loader: 'ts' };
      });
    },
  };
}
