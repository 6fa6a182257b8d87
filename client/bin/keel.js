#!/usr/bin/env node
/* global process, console, URL */
// The `keel` command: runs client/cli.ts through tsx, so it works after `npm ci` with no build.
// `keel --version` alone is answered here, from package.json, without loading the CLI (what
// scripts and bug reports ask first should not cost a TypeScript compile); client/cli.ts
// declares the same flag for `keel --help`.
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  console.log(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../cli.ts');
}
