// @ts-check
import { builtinModules } from 'node:module';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const nodeBuiltins = builtinModules.filter((name) => !name.startsWith('_'));
const builtinBan = {
  paths: nodeBuiltins.map((name) => ({ name, message: 'Node built-ins are I/O; keep them out of this folder.' })),
  nodePrefix: { regex: '^node:', message: 'Node built-ins are I/O; keep them out of this folder.' },
};
/** Machines are pure: no Node built-ins, and only the imports `regex` lets through. */
const pureImports = (/** @type {string} */ regex, /** @type {string} */ message) => ['error', { paths: builtinBan.paths, patterns: [builtinBan.nodePrefix, { regex, message }] }];

export default tseslint.config(
  // bench/peers is its own package (installed on demand), checked by its own tsconfig.
  // test/fixtures/lint holds code that breaks the rules on purpose (lint-boundaries.test.ts).
  // The .cjs files are plain CommonJS loaded outside the TypeScript project (a converter path, --require preloads).
  { ignores: ['test/fixtures/lint/**', 'dist/**', 'node_modules/**', '.keel/**', 'coverage/**', 'bench/peers/**', 'worker/failure-converter.cjs', 'bench/promise-sites.cjs', 'bench/alloc-profile.cjs', 'bench/sink-calls.cjs'] },
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
