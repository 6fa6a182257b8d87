// The import bans are what keep workflows replayable and machines pure; check that
// the linter really reports them, on the same config `npm run lint` uses. The bans need no
// type information: they are checked with the typed rules off (typescript-eslint's
// disableTypeChecked), which spares building the whole project's TypeScript program (49 s
// of a 169 s unit run on 2 busy cores). The one typed rule checked here runs on a one-file
// program (test/fixtures/lint/tsconfig.json), with the same rule configuration.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cruise, type ICruiseResult, type IConfiguration } from 'dependency-cruiser';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';

const untyped = new ESLint({ cwd: process.cwd(), overrideConfig: tseslint.configs.disableTypeChecked });
const typedProbe = new ESLint({
  cwd: process.cwd(),
  // The fixtures break the rules on purpose, so `npm run lint` ignores them; this does not.
  ignore: false,
  overrideConfig: { files: ['test/fixtures/lint/**/*.ts'], languageOptions: { parserOptions: { projectService: false, project: 'test/fixtures/lint/tsconfig.json' } } },
});

async function ruleIdsFor(filePath: string, code: string, eslint = untyped): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).map((message) => `${message.ruleId}: ${message.message}`);
}

// Seconds when the machine is quiet; the first lint loads the plugins, slow on 2 busy cores.
describe('lint boundaries', { timeout: 30_000 }, () => {
  it('rejects a Node built-in in workflows/ and machines/', async () => {
    for (const dir of ['workflows', 'machines']) {
      const messages = await ruleIdsFor(`${dir}/index.ts`, "import fs from 'node:fs';\nexport const x = fs;\n");
      expect(messages.join('\n'), dir).toMatch(/no-restricted-imports: .*Node built-ins/);
      const bare = await ruleIdsFor(`${dir}/index.ts`, "import fs from 'fs';\nexport const x = fs;\n");
      expect(bare.join('\n'), dir).toMatch(/no-restricted-imports/);
    }
  });

  it('allows only the workflow API among Temporal packages in workflows/', async () => {
    const file = 'workflows/index.ts';
    expect(await ruleIdsFor(file, "import { Client } from '@temporalio/client';\nexport const x = Client;\n")).toEqual([
      expect.stringMatching(/Workflows may import only @temporalio\/workflow/),
    ]);
    expect(await ruleIdsFor(file, "import { sleep } from '@temporalio/workflow';\nexport const x = sleep;\n")).toEqual([]);
  });

  it('keeps activity implementations out of workflows/ but allows their types', async () => {
    const file = 'workflows/index.ts';
    expect(await ruleIdsFor(file, "import { createActivities } from '../activities/index';\nexport const x = createActivities;\n")).toEqual([
      expect.stringMatching(/import their types only/),
    ]);
    expect(
      await ruleIdsFor(file, "import type { KeelActivityFunctions } from '../activities/index';\nexport type X = KeelActivityFunctions;\n"),
    ).toEqual([]);
  });

  it('rejects I/O libraries, the clock and randomness in machines/', async () => {
    const file = 'machines/index.ts';
    expect((await ruleIdsFor(file, "import { Worker } from '@temporalio/worker';\nexport const x = Worker;\n")).join()).toMatch(
      /machines\/ is pure/,
    );
    expect((await ruleIdsFor(file, 'export const now = () => Date.now();\n')).join()).toMatch(/no-restricted-globals/);
    expect((await ruleIdsFor(file, 'export const r = () => Math.random();\n')).join()).toMatch(/no-restricted-properties/);
  });

  it('reports floating promises', async () => {
    // Files linted as they are on disk: linting other text under a typed program's file name
    // came back with no messages at all once, in CI on a clean clone.
    const [floating, voided] = await typedProbe.lintFiles(['test/fixtures/lint/floating.ts', 'test/fixtures/lint/voided.ts']);
    const ids = (r: typeof floating) => (r?.messages ?? []).map((m) => `${m.ruleId}: ${m.message}`);
    expect(ids(floating).join('\n')).toMatch(/no-floating-promises/);
    expect(ids(voided)).toEqual([]);
  });

  // Layering rules 2-9 (README, "Layering"): one planted import per rule, each into a file that
  // exists, so the rule judges the resolved path as it does in `npm run lint`.
  const planted: Array<{ rule: number; file: string; code: string }> = [
    { rule: 2, file: 'shared/planted.ts', code: "import { createKeelWorker } from '../worker/worker';\nexport const x = createKeelWorker;\n" },
    { rule: 3, file: 'workflows/planted.ts', code: "import type { KeelWorkerEnvName } from '../shared/env';\nexport type X = KeelWorkerEnvName;\n" },
    { rule: 4, file: 'activities/planted.ts', code: "import { loadWorkerConfig } from '../worker/config';\nexport const x = loadWorkerConfig;\n" },
    { rule: 4, file: 'activities/tools/planted.ts', code: "import { DEFAULT_TASK_QUEUE } from '../../workflows/defaults';\nexport const x = DEFAULT_TASK_QUEUE;\n" },
    { rule: 5, file: 'worker/planted.ts', code: "import { KeelClient } from '../client/keel-client';\nexport const x = KeelClient;\n" },
    { rule: 6, file: 'client/planted.ts', code: "import type { ModelCallInput } from '../activities/llm';\nexport type X = ModelCallInput;\n" },
    { rule: 6, file: 'client/planted.ts', code: "import { startServer } from '../server/main';\nexport const x = startServer;\n" },
    { rule: 6, file: 'client/planted.ts', code: "import { keelEnv } from '../shared/env';\nimport { program } from './cli';\nexport const x = [keelEnv, program];\n" },
    { rule: 7, file: 'server/planted.ts', code: "import { createKeelWorker } from '../worker/worker';\nexport const x = createKeelWorker;\n" },
    { rule: 8, file: 'standin/planted.ts', code: "import { KeelClient } from '../client/keel-client';\nexport const x = KeelClient;\n" },
    { rule: 9, file: 'server/planted.ts', code: "import { createModelActivities } from '../test/fixtures/llm-harness';\nexport const x = createModelActivities;\n" },
  ];

  it.each(planted)('layering rule $rule reports a bad import in $file', async ({ rule, file, code }) => {
    const messages = await ruleIdsFor(file, code);
    expect(messages.filter((m) => m.startsWith('import-x/no-restricted-paths: ')).join('\n')).toMatch(new RegExp(`Layering rule ${rule}: `));
  });

  it('lets each layer import what its rule allows', async () => {
    const allowed: Array<{ file: string; code: string }> = [
      { file: 'activities/planted.ts', code: "import { KeelWaiting } from '../workflows/search-attributes';\nimport { keelEnv } from '../shared/env';\nexport const x = [KeelWaiting, keelEnv];\n" },
      { file: 'activities/planted.ts', code: "import { MODEL_TOPIC } from '../workflows/protocol/topics';\nimport type { ToolEntry } from '../workflows/protocol/tool-entry';\nexport const x: [string, ToolEntry?] = [MODEL_TOPIC];\n" },
      { file: 'client/planted.ts', code: "import { keelDataConverter } from '../shared/encryption';\nimport { DEFAULT_TASK_QUEUE } from '../workflows/defaults';\nexport const x = [keelDataConverter, DEFAULT_TASK_QUEUE];\n" },
      // The CLI and the demo are entry points: they start servers and workers.
      { file: 'client/cli/planted.ts', code: "import { startServer } from '../../server/main';\nimport { createKeelWorker } from '../../worker/worker';\nexport const x = [startServer, createKeelWorker];\n" },
      { file: 'server/planted.ts', code: "import { KeelClient } from '../client/keel-client';\nimport { configDir } from '../shared/config-dir';\nexport const x = [KeelClient, configDir];\n" },
      { file: 'worker/planted.ts', code: "import { createActivities } from '../activities/index';\nimport { keelEnv } from '../shared/env';\nexport const x = [createActivities, keelEnv];\n" },
    ];
    for (const { file, code } of allowed) expect(await ruleIdsFor(file, code), file).toEqual([]);
  });

  it("matches the layering table (docs/development.md) rule by rule", async () => {
    // A path held in a variable: TypeScript does not type the plain-JavaScript config module.
    const configModule: string = '../../eslint.config.js';
    const { layerRules } = (await import(configModule)) as {
      layerRules: Array<{ rule: number; importer: string; from: string[]; except?: string[] }>;
    };
    const page = readFileSync('docs/development.md', 'utf8');
    const section = page.slice(page.indexOf('### Layering'));
    const rows = section.split('\n').filter((line) => /^\| \d+ \|/.test(line));
    expect(rows.map((row) => Number(row.split('|')[1]))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(planted.map((p) => p.rule).sort((a, b) => a - b)).toEqual(expect.arrayContaining(layerRules.map((r) => r.rule)));
    const folder = (glob: string) => (glob.startsWith('client/{cli,demo') ? 'the CLI and demo' : `\`${glob.replace(/\*\*$/, '')}\``);
    for (const { rule, from, except } of layerRules) {
      const row = rows.find((line) => line.startsWith(`| ${rule} |`)) ?? '';
      const forbidden = row.split('|')[3] ?? '';
      // Each folder the config forbids is named in the row, in the config's order, and no other.
      const named = [...new Set(from.map(folder))];
      expect(forbidden.replace(/ \(but [^)]*\)/g, '').replace(/;.*$/, '').trim(), `rule ${rule}`).toBe(named.join(', '));
      const allowed = /\(but ([^)]*)\)/.exec(forbidden)?.[1] ?? '';
      for (const path of except ?? []) expect(allowed, `rule ${rule}`).toContain(`\`${path.replace(/^\*\*\//, '').replace(/\*\*$/, '')}\``);
    }
  });

  it('reports an import cycle in workflows/, type imports included (rule 10)', async () => {
    const require = createRequire(import.meta.url);
    const config = require('../../.dependency-cruiser.cjs') as IConfiguration;
    const result = await cruise(['test/fixtures/lint/cycle'], { ...config.options, ruleSet: { forbidden: config.forbidden }, validate: true });
    const violations = (result.output as ICruiseResult).summary.violations.filter((v) => v.rule.name === 'no-workflow-cycle');
    // Reported once, from the cycle's first file; third.ts only imports into it.
    expect(violations.length).toBeGreaterThan(0);
    const inCycles = new Set(violations.flatMap((v) => [v.from, ...(v.cycle ?? []).map((step) => step.name)]));
    expect([...inCycles].sort()).toEqual(['test/fixtures/lint/cycle/workflows/first.ts', 'test/fixtures/lint/cycle/workflows/second.ts']);
  });
});
