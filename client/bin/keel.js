#!/usr/bin/env node
// The `keel` command: runs client/cli.ts through tsx, so it works after `npm ci` with no build.
import { register } from 'tsx/esm/api';

register();
await import('../cli.ts');
