// The model's streaming HTTP connection, inside the model activity (seed 000 Stream
// connection). The activity reports this state in its heartbeats, so a stuck or
// reconnecting stream is visible from outside; bytes are counted, never stored.
import { z } from 'zod';
import { assertNever, defineMachine, reject, type Step } from './core';
import { emit, type EmitEvent } from './events';
import { lazySchema } from './lazy-schema';

export const DEFAULT_MAX_CONNECT_ATTEMPTS = 3;

const common = {
  maxAttempts: z.number().int().positive(),
  /** Bytes over every connection of this call, for heartbeats and metrics. */
  totalBytes: z.number().int().nonnegative(),
};

export const streamStateSchema = lazySchema(() => z.discriminatedUnion('status', [
  z.strictObject({ status: z.literal('disconnected'), ...common, attempts: z.number().int().nonnegative() }),
  z.strictObject({ status: z.literal('connecting'), ...common, attempt: z.number().int().positive() }),
  z.strictObject({ status: z.literal('connected'), ...common, attempt: z.number().int().positive() }),
  z.strictObject({ status: z.literal('streaming'), ...common, attempt: z.number().int().positive(), bytes: z.number().int().nonnegative() }),
  z.strictObject({ status: z.literal('completed'), ...common, attempts: z.number().int().positive() }),
  z.strictObject({ status: z.literal('failed'), ...common, attempts: z.number().int().positive(), error: z.string() }),
]));
export type StreamState = z.infer<typeof streamStateSchema>;
export type StreamStatus = StreamState['status'];

export const streamEventSchema = lazySchema(() => z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('connect') }),
  z.strictObject({ type: z.literal('connected') }),
  z.strictObject({ type: z.literal('start_streaming') }),
  z.strictObject({ type: z.literal('data'), bytes: z.number().int().nonnegative() }),
  z.strictObject({ type: z.literal('complete') }),
  z.strictObject({ type: z.literal('error'), message: z.string() }),
  z.strictObject({ type: z.literal('disconnect') }),
  z.strictObject({ type: z.literal('reconnect') }),
]));
export type StreamEvent = z.infer<typeof streamEventSchema>;

export type StreamDirective = EmitEvent;

export function createStream(maxAttempts: number = DEFAULT_MAX_CONNECT_ATTEMPTS): StreamState {
  return { status: 'disconnected', maxAttempts, totalBytes: 0, attempts: 0 };
}

const S = ['disconnected', 'connecting', 'connected', 'streaming', 'completed', 'failed'] as const;
const E = ['connect', 'connected', 'start_streaming', 'data', 'complete', 'error', 'disconnect', 'reconnect'] as const;
const row = (from: StreamStatus, event: StreamEvent['type'], to: StreamStatus, guard?: string) =>
  guard === undefined ? { from, event, to } : { from, event, to, guard };

export const streamMachine = defineMachine<StreamState, StreamEvent, StreamDirective>({
  name: 'stream',
  states: S,
  events: E,
  terminal: ['completed'],
  table: [
    row('disconnected', 'connect', 'connecting', 'attempts left'),
    row('connecting', 'connected', 'connected'),
    row('connecting', 'error', 'failed'),
    row('connecting', 'disconnect', 'disconnected'),
    row('connected', 'start_streaming', 'streaming'),
    row('connected', 'error', 'failed'),
    row('connected', 'disconnect', 'disconnected'),
    row('streaming', 'data', 'streaming'),
    row('streaming', 'complete', 'completed'),
    row('streaming', 'error', 'failed'),
    row('streaming', 'disconnect', 'disconnected'),
    row('failed', 'reconnect', 'connecting', 'attempts left'),
    row('failed', 'disconnect', 'disconnected'),
  ],
  stateSchema: streamStateSchema,
  eventSchema: streamEventSchema,
  reduce,
});

function attemptsOf(state: StreamState): number {
  return 'attempt' in state ? state.attempt : state.attempts;
}

function reduce(state: StreamState, event: StreamEvent): Step<StreamState, StreamDirective> {
  const { maxAttempts, totalBytes } = state;
  const attempts = attemptsOf(state);
  switch (event.type) {
    case 'connect':
    case 'reconnect': {
      if (attempts >= maxAttempts) return reject(`all ${maxAttempts} connection attempts are spent`);
      const attempt = attempts + 1;
      return { state: { status: 'connecting', maxAttempts, totalBytes, attempt }, directives: [emit('stream.connecting', { attempt })] };
    }
    case 'connected':
      return { state: { status: 'connected', maxAttempts, totalBytes, attempt: attempts }, directives: [emit('stream.connected', { attempt: attempts })] };
    case 'start_streaming':
      return {
        state: { status: 'streaming', maxAttempts, totalBytes, attempt: attempts, bytes: 0 },
        directives: [emit('stream.streaming', { attempt: attempts })],
      };
    case 'data':
      if (state.status !== 'streaming') return reject('not streaming');
      // Deltas are too frequent for the event log; the count goes out in heartbeats.
      return { state: { ...state, bytes: state.bytes + event.bytes, totalBytes: totalBytes + event.bytes }, directives: [] };
    case 'complete':
      return { state: { status: 'completed', maxAttempts, totalBytes, attempts }, directives: [emit('stream.completed', { totalBytes })] };
    case 'error':
      return {
        state: { status: 'failed', maxAttempts, totalBytes, attempts: Math.max(1, attempts), error: event.message },
        directives: [emit('stream.failed', { attempts, error: event.message })],
      };
    case 'disconnect':
      return { state: { status: 'disconnected', maxAttempts, totalBytes, attempts }, directives: [emit('stream.disconnected', { totalBytes })] };
    default:
      return assertNever(event);
  }
}
