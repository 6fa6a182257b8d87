// Event-log entries are read by every subscriber's poll (an update, in history) and by the
// `events` query, whose answer must stay under the server's blob limit: an entry carries
// at most a bounded preview of any long text (a 1 MB user message, a tool's whole output,
// a file written by a tool call). The full text stays in the transcript and the store.
import type { LogEvent } from '../machines/index';
import type { GoalRunnerEvent } from './definitions';

/** A tool's output: its beginning is what a reader of the log wants. */
const OUTPUT_PREVIEW_CHARS = 2_000;
/** Any other text (user messages, tool arguments, final answers). */
const TEXT_PREVIEW_CHARS = 8_000;
/** Nesting kept in JSON values (tool arguments); deeper values are summarized. */
const MAX_DEPTH = 12;

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}… (${text.length - max} more characters in the transcript)`;
}

function bound(value: unknown, depth: number, maxDepth = MAX_DEPTH): unknown {
  if (typeof value === 'string') return clip(value, TEXT_PREVIEW_CHARS);
  if (value === null || typeof value !== 'object') return value;
  if (depth >= maxDepth) return '… (nested too deep for the event log)';
  if (Array.isArray(value)) return value.map((v) => bound(v, depth + 1, maxDepth));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, bound(v, depth + 1, maxDepth)]));
}

/** The event as the log carries it: long texts cut to a preview. */
export function preview<E extends LogEvent | GoalRunnerEvent>(event: E): E {
  const bounded = bound(event, 0) as E;
  if (event.kind === 'tool.result') return { ...bounded, output: clip(event.output, OUTPUT_PREVIEW_CHARS) };
  return bounded;
}

/** A value a query answers with (a state view holding queued messages or steers): every
 *  long text cut to a preview, so that the answer stays under the server's blob limit. */
export function previewValue<T>(value: T): T {
  // A state's shape is fixed by its machine's schema: no depth limit, unlike tool arguments.
  return bound(value, 0, Infinity) as T;
}

/** How a text appears in the log (a client matches its own message against `turn.started`). */
export function previewText(text: string): string {
  return clip(text, TEXT_PREVIEW_CHARS);
}
