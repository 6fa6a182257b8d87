// docs/reference.md is generated from the code (scripts/reference-doc.ts): the retry table, the
// built-in tools, the settings a worker reads and the model table. It must never drift from them.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RETRY_TABLE } from '../../machines/model-retry';
import { MODELS } from '../../machines/models';
import { REFERENCE_PATH } from '../../scripts/docs';
import { CODE_SOURCES, renderReferenceDoc } from '../../scripts/reference-doc';

describe('docs/reference.md', () => {
  it('is what `npm run docs` generates from the code today', () => {
    expect(readFileSync(REFERENCE_PATH, 'utf8'), 'docs/reference.md is stale: run `npm run docs`').toBe(renderReferenceDoc());
  });

  it('follows the code: a changed retry row, a new setting, a new tool or a new price changes the page', () => {
    const today = renderReferenceDoc();
    const changed = [
      { ...CODE_SOURCES, retryTable: { ...RETRY_TABLE, turn: { ...RETRY_TABLE.turn, overloaded: { ...RETRY_TABLE.turn.overloaded, retries: 5, backoffMs: [4_000] } } } },
      { ...CODE_SOURCES, keelEnv: { ...CODE_SOURCES.keelEnv, KEEL_NEW_SETTING: 'a new knob' } },
      { ...CODE_SOURCES, tools: [...CODE_SOURCES.tools, { ...CODE_SOURCES.tools[0]!, name: 'read_twice' }] },
      { ...CODE_SOURCES, models: { ...MODELS, 'claude-new': { ...MODELS['claude-sonnet-4-6']!, billedAs: 'claude-new', price: { input: 7, output: 35 } } } },
    ];
    const pages = changed.map((sources) => renderReferenceDoc(sources));
    for (const page of pages) expect(page).not.toBe(today);
    expect(pages[0]).toContain('| `overloaded` | 5 | 4 s, then 4 s apart |');
    expect(pages[1]).toContain('| `KEEL_NEW_SETTING` | a new knob |');
    expect(pages[2]).toContain('| `read_twice` | read |');
    expect(pages[3]).toContain('| `claude-new` | `claude-new` | — | $7 | $35 | — |');
  });

  it('lists every retry row, every built-in tool, every worker setting and every model', () => {
    const page = readFileSync(REFERENCE_PATH, 'utf8');
    for (const caller of Object.keys(RETRY_TABLE)) expect(page).toContain(`### \`${caller}\``);
    for (const tool of CODE_SOURCES.tools) expect(page).toContain(`| \`${tool.name}\` |`);
    for (const name of [...Object.keys(CODE_SOURCES.keelEnv), ...Object.keys(CODE_SOURCES.otelEnv)]) expect(page).toContain(`| \`${name}\` |`);
    for (const id of Object.keys(MODELS)) expect(page).toContain(`| \`${id}\` |`);
  });
});
