// Small assertions shared by the scenario tests.
import { expect } from 'vitest';
import type { LogEvent, TransitionResult } from '../../../machines/index';

/** The accepted result of a transition; fails the test with the machine's reason otherwise. */
export function accepted<St, D>(result: TransitionResult<St, D>): { state: St; directives: readonly D[] } {
  if (!result.ok) expect.fail(result.error.message);
  return { state: result.state, directives: result.directives };
}

/** The kinds of the events a list of directives logs, in order. */
export function kinds(directives: readonly unknown[]): string[] {
  return directives.flatMap((d) => (isEmit(d) ? [d.event.kind] : []));
}

export function events(directives: readonly unknown[]): LogEvent[] {
  return directives.flatMap((d) => (isEmit(d) ? [d.event] : []));
}

export function ofType<T extends { type: string }, K extends T['type']>(directives: readonly T[], type: K): Extract<T, { type: K }>[] {
  return directives.filter((d): d is Extract<T, { type: K }> => d.type === type);
}

function isEmit(d: unknown): d is { type: 'emit_event'; event: LogEvent } {
  return typeof d === 'object' && d !== null && (d as { type?: unknown }).type === 'emit_event';
}
