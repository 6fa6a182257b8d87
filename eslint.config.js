// @ts-check
import { builtinModules } from 'node:module';
import js from '@eslint/js';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

const nodeBuiltins = builtinModules.filter((name) => !name.startsWith('_'));
const builtinBan = {
  paths: nodeBuiltins.map((name) => ({ name, message: 'Node built-ins are I/O; keep them out of this folder.' })),
  nodePrefix: { regex: '^node:', message: 'Node built-ins are I/O; keep them out of this folder.' },
};
/**
 * The layers (README, "Layering"): which folder's code may not import which. Rule 1 (machines/)
 * and the rest of rule 3 (workflows/: no Node, only the workflow API, activity types only) are
 * the `no-restricted-imports` blocks below; these are the folder-to-folder rules, checked by
 * import-x's `no-restricted-paths` on the resolved file of every import (type imports too).
 * The SDK is client/ without its two entry points, the `keel` CLI (client/cli.ts, client/cli/,
 * client/bin/) and `npm run demo` (client/demo.ts, client/demo/), which start a server, a worker
 * or a stand-in and so may import any layer. lint-boundaries.test.ts plants a bad import for each
 * rule and checks the README's table lists exactly these.
 */
const cli = ['client/{cli,demo}.ts', 'client/{cli,demo,bin}/**'];
const sdk = ['client/!(cli|demo).ts', 'client/!(cli|demo|bin)/**'];
const tooling = ['test/**', 'bench/**', 'scripts/**'];
export const layerRules = [
  { rule: 2, importer: 'shared/', target: ['shared/**'], from: ['workflows/**', 'activities/**', 'worker/**', 'client/**', 'server/**', 'standin/**'], message: 'shared/ is the lowest layer after machines/: it imports only machines/.' },
  { rule: 3, importer: 'workflows/', target: ['workflows/**'], from: ['shared/**', 'worker/**', 'client/**', 'server/**', 'standin/**'], message: 'Workflow code is bundled and replayed: it imports machines/ and activity types only.' },
  { rule: 4, importer: 'activities/', target: ['activities/**'], from: ['workflows/**', 'worker/**', 'client/**', 'server/**', 'standin/**'], except: ['**/workflows/search-attributes.ts', '**/workflows/protocol/**'], message: 'Activities import machines/ and shared/ (and the protocol modules and search-attribute names, the contract both sides read); the worker assembles them, not the other way round.' },
  { rule: 5, importer: 'worker/', target: ['worker/**'], from: ['client/**', 'server/**', 'standin/**'], message: 'The worker runs workflows and activities; it does not import the SDK, the server or the stand-in.' },
  { rule: 6, importer: 'client/ (the SDK)', target: sdk, from: ['activities/**', 'worker/**', 'server/**', 'standin/**', ...cli], message: 'The SDK talks to workflows through Temporal: it imports workflows/ (definitions, types), machines/ and shared/ only.' },
  { rule: 7, importer: 'server/', target: ['server/**'], from: ['activities/**', 'worker/**', 'standin/**', ...cli], message: 'The server is built on the SDK: it imports client/ (the SDK), workflows/, machines/ and shared/ only.' },
  { rule: 8, importer: 'standin/', target: ['standin/**'], from: ['shared/**', 'workflows/**', 'activities/**', 'worker/**', 'client/**', 'server/**'], message: 'The stand-in model server is Keel-independent: it imports machines/ only.' },
  { rule: 9, importer: 'every product folder', target: ['machines/**', 'shared/**', 'workflows/**', 'activities/**', 'worker/**', 'client/**', 'server/**', 'standin/**'], from: tooling, message: 'Product code never imports tests, benchmarks or scripts.' },
];

/** Machines are pure: no Node built-ins, and only the imports `regex` lets through. */
const pureImports = (/** @type {string} */ regex, /** @type {string} */ message) => ['error', { paths: builtinBan.paths, patterns: [builtinBan.nodePrefix, { regex, message }] }];

export default tseslint.config(
  // bench/peers is its own package (installed on demand), checked by its own tsconfig.
  // test/fixtures/lint holds code that breaks the rules on purpose (lint-boundaries.test.ts); .tmp/ is scratch (git-ignored).
  // The .cjs files are plain CommonJS loaded outside the TypeScript project (a converter path, --require preloads).
  // packages/*/dist is built output; examples/ are separate projects (their own tsconfig, packages installed from tarballs), type-checked by test/e2e/react-app.test.ts.
  { ignores: ['.tmp/**', 'test/fixtures/lint/**', 'dist/**', 'packages/*/dist/**', 'examples/**', 'node_modules/**', '.keel/**', 'coverage/**', 'bench/peers/**', 'worker/failure-converter.cjs', '.dependency-cruiser.cjs', 'bench/promise-sites.cjs', 'bench/alloc-profile.cjs', 'bench/sink-calls.cjs', 'bench/no-stack-trace-hook.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      // Activities and handlers are async by contract, whether or not they await.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // The layers (rules 2-9 of the README's "Layering"; see layerRules above). Rule 10, no
    // import cycle in workflows/, is dependency-cruiser's (.dependency-cruiser.cjs, run by
    // `npm run lint`): import-x/no-cycle skips type imports.
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.tsx', '.js', '.json'] })] },
    rules: {
      'import-x/no-restricted-paths': [
        'error',
        {
          basePath: import.meta.dirname,
          zones: layerRules.map(({ rule, target, from, except, message }) => ({ target, from, ...(except ? { except } : {}), message: `Layering rule ${rule}: ${message}` })),
        },
      ],
    },
  },
  {
    // Workflow code is replayed: it may only use the workflow API (and the streams
    // module's workflow entry), never Node, other Temporal packages, or activity code.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: builtinBan.paths,
          patterns: [
            builtinBan.nodePrefix,
            {
              regex: '^@temporalio/(?!workflow$|workflow-streams/workflow$)',
              message: 'Workflows may import only @temporalio/workflow and @temporalio/workflow-streams/workflow.',
            },
            {
              regex: '^\\.\\./activities(?!/llm-options$)',
              allowTypeImports: true,
              message: 'Workflows call activities through proxyActivities; import their types only.',
            },
          ],
        },
      ],
    },
  },
  {
    // Machines are pure: no clock, no I/O, no Temporal. Only sibling modules and zod.
    files: ['machines/**/*.ts'],
    rules: {
      'no-restricted-imports': pureImports('^(?!\\./|zod$|picomatch/posix$)', 'machines/ is pure: import only ./siblings, zod and picomatch/posix.'),
      'no-restricted-globals': [
        'error',
        { name: 'Date', message: 'Time arrives on events; machines never read the clock.' },
        { name: 'setTimeout', message: 'Machines emit timer directives instead.' },
        { name: 'setInterval', message: 'Machines emit timer directives instead.' },
        { name: 'fetch', message: 'Machines do no I/O.' },
        { name: 'process', message: 'Machines do no I/O.' },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Math', property: 'random', message: 'Randomness arrives on events; machines are deterministic.' },
      ],
    },
  },
  {
    // A machine split into a folder (machines/turn/) imports its own files and machines/ siblings, still nothing else.
    files: ['machines/*/**/*.ts'],
    rules: {
      'no-restricted-imports': pureImports('^(?!\\./|\\.\\./(?!\\.\\.)|zod$|picomatch/posix$)', 'machines/ is pure: import only machines/ files, zod and picomatch/posix.'),
    },
  },
  {
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // The console's scripts run in the browser (server/console, served by `keel serve`).
    files: ['server/console/**/*.js'],
    languageOptions: {
      globals: Object.fromEntries(
        ['window', 'document', 'location', 'history', 'sessionStorage', 'fetch', 'crypto', 'URLSearchParams', 'FormData', 'Node', 'TextDecoderStream', 'AbortController', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'console'].map((g) => [g, 'readonly']),
      ),
    },
  },
);
