// `npm run build:packages`: the packages under packages/ as a registry would ship them, ESM
// JavaScript (esbuild) and declarations (tsc), into each package's dist/. Each package's
// `prepack` runs it for itself, so `npm pack` (and `npm publish`) never ship a stale build.
//
// - @keel/client (packages/client): the Node SDK, client/index.ts, bundled with Keel's own
//   modules; npm packages stay imports, and each one it imports must be a dependency of the
//   package (checked here: a bundle that imports an undeclared package fails the build).
// - @keel/react (packages/react): the browser's HTTP/SSE client (`@keel/react/http`, no React)
//   and the hooks over it. Its JavaScript may import only react and eventsource-parser:
//   nothing of the worker, Temporal or the server reaches a front end (checked here too).
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { esmSubpaths } from './esbuild-plugins';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tsc = path.join(root, 'node_modules', 'typescript-7', 'bin', 'tsc');

interface PackageBuild {
  dir: string;
  entryPoints: Record<string, string>;
  platform: 'node' | 'browser';
}

const PACKAGES: Record<string, PackageBuild> = {
  client: { dir: 'packages/client', entryPoints: { index: 'client/index.ts' }, platform: 'node' },
  react: { dir: 'packages/react', entryPoints: { index: 'packages/react/src/index.ts', http: 'packages/react/src/http/index.ts' }, platform: 'browser' },
};

/** The npm package a bare import names (`@scope/name/sub` → `@scope/name`); null for node: builtins. */
export function packageOf(spec: string): string | null {
  if (spec.startsWith('node:')) return null;
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** The packages a build's output imports. */
function importedPackages(meta: Metafile): Set<string> {
  const out = new Set<string>();
  for (const o of Object.values(meta.outputs)) for (const i of o.imports) if (i.external) out.add(packageOf(i.path) ?? '');
  out.delete('');
  return out;
}

async function buildPackage(name: string): Promise<void> {
  const p = PACKAGES[name];
  if (!p) throw new Error(`no package ${name}: one of ${Object.keys(PACKAGES).join(', ')}`);
  const dir = path.join(root, p.dir);
  const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name: string; dependencies?: Record<string, string>; peerDependencies?: Record<string, string> };
  const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]);
  rmSync(path.join(dir, 'dist'), { recursive: true, force: true });
  const result = await build({
    entryPoints: p.entryPoints,
    absWorkingDir: root,
    outdir: path.join(dir, 'dist'),
    bundle: true,
    splitting: p.platform === 'browser',
    format: 'esm',
    platform: p.platform,
    target: p.platform === 'node' ? 'node20' : 'es2022',
    packages: 'external',
    jsx: 'automatic',
    sourcemap: true,
    metafile: true,
    logLevel: 'warning',
    plugins: p.platform === 'node' ? [esmSubpaths(root)] : [],
  });
  const undeclared = [...importedPackages(result.metafile)].filter((pkg) => !declared.has(pkg));
  if (undeclared.length) throw new Error(`${manifest.name} imports ${undeclared.join(', ')}, which its package.json does not declare`);
  execFileSync(process.execPath, [tsc, '-p', path.join(dir, 'tsconfig.build.json')], { stdio: 'inherit' });
  console.log(`${manifest.name}: built ${p.dir}/dist (imports ${[...importedPackages(result.metafile)].sort().join(', ') || 'nothing'})`);
}

const wanted = process.argv.slice(2);
for (const name of wanted.length ? wanted : Object.keys(PACKAGES)) await buildPackage(name);
