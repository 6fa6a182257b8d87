// The import bans are what keep workflows replayable and machines pure; check that
// the linter really reports them, on the same config `npm run lint` uses. The bans need no
// type information: they are checked with the typed rules off (typescript-eslint's
// disableTypeChecked), which spares building the whole project's TypeScript program (49 s
// of a 169 s unit run on 2 busy cores). The one typed rule checked here runs on a one-file
// program (test/fixtures/lint/tsconfig.json), with the same rule configuration.
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
});
