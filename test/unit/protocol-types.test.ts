// Each workflow kind's protocol (workflows/protocol/) is the one source of its shapes: the
// option and input types are derived from the zod schemas (z.input / z.output / z.infer), the
// signal and update definitions are typed by the schema their payload must satisfy, and no
// hand-written twin of a derived type exists anywhere else, where it could drift from the
// schema (SessionOptions, GoalOptions and AgentInput once did: checked by key names only).
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { SignalDefinition, UpdateDefinition } from '@temporalio/common';
import type { z } from 'zod';
import type { SetupTool } from '../../activities/setup';
import type { ModelToolSpec, ToolActivityOptions as BuiltinActivityOptions } from '../../activities/tools/definitions';
import type { ResolvedAgentInput } from '../../workflows/agent';
import type { ResolvedGoalOptions } from '../../workflows/goal-options';
import type { ResolvedSessionOptions } from '../../workflows/session-options';
import type { ToolEntry as TurnToolEntry } from '../../workflows/turn-runner';
import { agentApproveSignal, agentDenySignal, AGENT_SIGNALS, type agentInputSchema, type AgentInput } from '../../workflows/protocol/agent';
import { approveSchema, noPayloadSchema, reasonSchema } from '../../workflows/protocol/controls';
import { GOAL_CONTROLS, GOAL_SIGNALS, type goalOptionsSchema, type GoalOptions } from '../../workflows/protocol/goal';
import { SESSION_CONTROLS, SESSION_SIGNALS, type sessionOptionsSchema, type SessionOptions } from '../../workflows/protocol/session';
import { toolActivityOptionsSchema, toolEntrySchema, type ToolActivityOptions, type ToolEntry } from '../../workflows/protocol/tool-entry';
import { EVENTS_TOPIC, MODEL_TOPIC } from '../../workflows/protocol/topics';

/** The arguments a signal or update definition is typed with. */
type ArgsOf<D> = D extends UpdateDefinition<unknown, infer A> ? A : D extends SignalDefinition<infer A> ? A : never;

const root = path.resolve(import.meta.dirname, '../..');
const PROTOCOL = 'workflows/protocol';

/** `export type Name = z.input|z.output|z.infer<typeof schema>` in the protocol modules: name → file. */
function derivedTypes(): Map<string, string> {
  const found = new Map<string, string>();
  for (const file of fs.readdirSync(path.join(root, PROTOCOL))) {
    const source = fs.readFileSync(path.join(root, PROTOCOL, file), 'utf8');
    for (const m of source.matchAll(/^export type (\w+) = z\.(?:input|output|infer)<typeof \w+>/gm)) found.set(m[1]!, `${PROTOCOL}/${file}`);
  }
  return found;
}

/** Every TypeScript source file of the layers that speak the protocol. */
function sources(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(rel);
      else if (/\.tsx?$/.test(e.name)) out.push(rel);
    }
  };
  for (const dir of ['workflows', 'activities', 'machines', 'client', 'server', 'worker']) walk(dir);
  return out;
}

/** Declarations of `name` that define a shape of their own: an interface, or a type alias to anything but an import of the same name. */
function twinsOf(name: string, source: string): string[] {
  const declared = new RegExp(String.raw`^\s*(?:export\s+)?(?:interface\s+${name}\b|type\s+${name}\s*(?:<[^=]*>)?\s*=)`, 'gm');
  return [...source.matchAll(declared)].map((m) => m[0].trim());
}

describe('the protocol types are derived from their schemas', () => {
  it('declares the option and input types of every workflow kind as the schema’s input or output', () => {
    const derived = derivedTypes();
    for (const name of ['SessionOptions', 'GoalOptions', 'AgentInput', 'ToolEntry', 'ToolActivityOptions', 'TaskEvidence', 'AgentReport', 'ApproveInput', 'BareControlInput']) {
      expect([name, derived.has(name)]).toEqual([name, true]);
    }
  });

  it('has no hand-written twin of a derived type anywhere in the runtime’s layers', () => {
    const derived = derivedTypes();
    const twins: string[] = [];
    for (const file of sources()) {
      const source = fs.readFileSync(path.join(root, file), 'utf8');
      for (const [name, home] of derived) {
        for (const twin of twinsOf(name, source)) if (file !== home) twins.push(`${file}: ${twin} (derived in ${home})`);
      }
    }
    expect(twins).toEqual([]);
  });

  it('recognises a twin when one is written (the scan above can fail)', () => {
    expect(twinsOf('SessionOptions', 'export interface SessionOptions {\n  workspace: string;\n}')).toHaveLength(1);
    expect(twinsOf('AgentInput', 'interface AgentInput extends Base {}')).toHaveLength(1);
    expect(twinsOf('ToolEntry', 'export type ToolEntry = { spec: unknown };')).toHaveLength(1);
    // Re-exports and aliases under another name are not twins.
    expect(twinsOf('ToolEntry', "export type { ToolEntry } from './protocol/tool-entry';\nexport type SetupTool = ToolEntry;")).toEqual([]);
  });

  it('gives the types the schemas’ shapes (checked by tsc: npm run typecheck)', () => {
    expectTypeOf<SessionOptions>().toEqualTypeOf<z.input<typeof sessionOptionsSchema>>();
    expectTypeOf<GoalOptions>().toEqualTypeOf<z.input<typeof goalOptionsSchema>>();
    expectTypeOf<AgentInput>().toEqualTypeOf<z.output<typeof agentInputSchema>>();
    expectTypeOf<ToolEntry>().toEqualTypeOf<z.output<typeof toolEntrySchema>>();
    // The tool entry is written once: what setup lists, what the turn runner holds, what the built-in and MCP tools declare.
    expectTypeOf<SetupTool>().toEqualTypeOf<ToolEntry>();
    expectTypeOf<TurnToolEntry>().toEqualTypeOf<ToolEntry>();
    expectTypeOf<BuiltinActivityOptions>().toEqualTypeOf<ToolActivityOptions>();
    expectTypeOf<ModelToolSpec>().toEqualTypeOf<ToolEntry['spec']>();
    // The resolvers fill defaults in the derived types: what a run uses has every default.
    expectTypeOf<ResolvedSessionOptions['model']>().toEqualTypeOf<string>();
    expectTypeOf<ResolvedGoalOptions['maxConcurrency']>().toEqualTypeOf<number>();
    expectTypeOf<ResolvedAgentInput['workspaceHostWaitMs']>().toEqualTypeOf<number>();
  });

  it('accepts the tool entries goals hand their agents, and refuses activity options that are not a tool activity’s', () => {
    const read = { startToCloseTimeout: 60_000, heartbeatTimeout: 10_000, retry: { maximumAttempts: 3, initialInterval: 500, backoffCoefficient: 2, maximumInterval: 5_000 } };
    expect(toolEntrySchema.safeParse({ spec: { name: 'read_file', description: 'd', input_schema: { type: 'object' } }, readOnly: true, activityOptions: read, local: true }).success).toBe(true);
    expect(toolEntrySchema.safeParse({ spec: { name: 'finish_task', description: 'd', input_schema: {} }, readOnly: true }).success).toBe(true);
    // Before, any object passed as a tool's activity options.
    expect(toolActivityOptionsSchema.safeParse({ startToCloseTimeout: '1 minute', heartbeatTimeout: 10_000, retry: { maximumAttempts: 1 } }).success).toBe(false);
    expect(toolActivityOptionsSchema.safeParse({ taskQueue: 'elsewhere', startToCloseTimeout: 1, heartbeatTimeout: 1, retry: { maximumAttempts: 1 } }).success).toBe(false);
    expect(toolActivityOptionsSchema.safeParse({}).success).toBe(false);
  });
});

describe('the controls are typed by the schemas their payloads satisfy', () => {
  it('names each control’s signal and update alike, and derives the names a run takes from the table', () => {
    for (const [key, control] of [...Object.entries(SESSION_CONTROLS), ...Object.entries(GOAL_CONTROLS)]) {
      expect([key, control.name, control.signal.name, control.update.name]).toEqual([key, key, key, key]);
    }
    // The same names, in the same order, as the lists written by hand before (the host records others as refused).
    expect(SESSION_SIGNALS).toEqual(['userMessage', 'approve', 'deny', 'interrupt', 'steer', 'pause', 'resume', 'stop', 'reset', 'restart', 'raiseBudget', 'answer', 'close']);
    expect(GOAL_SIGNALS).toEqual(['approvePlan', 'rejectPlan', 'resolveTask', 'cancel', 'approve', 'deny', 'agentReport']);
    expect(AGENT_SIGNALS).toEqual([agentApproveSignal.name, agentDenySignal.name, 'steer']);
    expect(AGENT_SIGNALS).toEqual(['approve', 'deny', 'steer']);
  });

  it('types a control that names nothing as what the workflow parses: {} (what Keel’s clients send), null or nothing', () => {
    for (const name of ['resume', 'stop', 'reset', 'restart'] as const) expect(SESSION_CONTROLS[name].input).toBe(noPayloadSchema);
    // Before, `[]`: Keel's clients sent `[{}]` past the definition by its name string.
    expectTypeOf<ArgsOf<typeof SESSION_CONTROLS.resume.signal>>().toEqualTypeOf<[z.input<typeof noPayloadSchema>]>();
    expectTypeOf<ArgsOf<typeof GOAL_CONTROLS.approvePlan.update>>().toEqualTypeOf<[z.input<typeof noPayloadSchema>]>();
    expectTypeOf<ArgsOf<typeof SESSION_CONTROLS.approve.update>>().toEqualTypeOf<[z.input<typeof approveSchema>]>();
    expect(noPayloadSchema.safeParse({}).success).toBe(true);
    expect(noPayloadSchema.safeParse(undefined).success).toBe(true);
    expect(noPayloadSchema.safeParse({ reason: 'x' }).success).toBe(false);
    expect(SESSION_CONTROLS.interrupt.input).toBe(reasonSchema);
    expect(SESSION_CONTROLS.approve.input).toBe(approveSchema);
    expect(GOAL_CONTROLS.approve.input).toBe(approveSchema);
  });

  it('leaves no client calling a control by its name string (`.name`) to get round a definition', () => {
    const bypasses = sources()
      .filter((f) => f.startsWith('client/') || f.startsWith('server/'))
      .flatMap((f) => [...fs.readFileSync(path.join(root, f), 'utf8').matchAll(/\w+(?:Update|Signal|Query)\.name\b/g)].map((m) => `${f}: ${m[0]}`));
    expect(bypasses).toEqual([]);
  });

  it('names the stream topics once', () => {
    expect([EVENTS_TOPIC, MODEL_TOPIC]).toEqual(['events', 'model']);
  });
});
