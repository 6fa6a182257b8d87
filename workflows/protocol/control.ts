// A control: an operation a workflow takes both as a signal (fire and forget) and as an
// update of the same name (answered, or refused by a synchronous validator), with the zod
// schema its payload must satisfy. Both definitions are typed by that schema's input, so a
// client that uses them sends what the workflow parses, and the tables of controls
// (./session.ts, ./goal.ts) give the names a run takes, the clients' calls and the HTTP
// bodies (server/schemas.ts) from one entry.
import { defineSignal, defineUpdate, type SignalDefinition } from '@temporalio/workflow';
import type { z } from 'zod';

export interface Control<Name extends string, Input extends z.ZodType, Result> {
  name: Name;
  /** The schema the payload must satisfy (the workflow parses with it; the API validates bodies with it). */
  input: Input;
  signal: SignalDefinition<[z.input<Input>], Name>;
  // (UpdateDefinition is not exported by @temporalio/workflow, the one Temporal package workflows import.)
  update: ReturnType<typeof defineUpdate<Result, [z.input<Input>], Name>>;
}

/** `defineControl<Result>()(name, schema)`: the result is named, the name and payload are inferred. */
export const defineControl =
  <Result>() =>
  <Name extends string, Input extends z.ZodType>(name: Name, input: Input): Control<Name, Input, Result> => ({
    name,
    input,
    signal: defineSignal<[z.input<Input>], Name>(name),
    update: defineUpdate<Result, [z.input<Input>], Name>(name),
  });

/** The names of a table of controls, in its order: every signal and update name a run takes. */
export const controlNames = <T extends Record<string, Control<string, z.ZodType, unknown>>>(table: T): (keyof T & string)[] => Object.keys(table);
