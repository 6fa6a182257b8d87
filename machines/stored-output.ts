// A large tool result kept once: the activity that ran the tool writes its text to the
// conversation store (a segment of one item, named by its hash) and hands the workflow a
// reference and a short preview. Workflow history then holds the preview twice (the tool's
// result, the next model call's `append`) instead of the whole text twice, and the store
// holds the text once; the model activity puts the text back into the request
// (activities/stored-outputs.ts). Pure, so the workflow and the activities share it.
import { z } from 'zod';
import { lazySchema } from './lazy-schema';

/** Results longer than this (UTF-8 bytes) are stored; shorter ones travel inline as before. */
export const STORE_OUTPUT_ABOVE_BYTES = 4_096;
/** Characters of a stored result kept in history, events and the console's view. */
export const STORED_PREVIEW_CHARS = 1_000;

/** A stored result: its segment id and its size, as the tool_result block's `keel_stored`. */
export const storedOutputSchema = lazySchema(() => z.strictObject({ id: z.string().regex(/^[0-9a-f]{64}$/), bytes: z.number().int().nonnegative() }));
export type StoredOutput = z.infer<typeof storedOutputSchema>;

/** What history keeps of a stored result: its head, and a line saying the rest is stored. */
export function storedPreview(text: string, bytes: number): string {
  const head = text.slice(0, STORED_PREVIEW_CHARS);
  return `${head}\n[… ${bytes} bytes in all, stored once in the conversation store; the model reads them whole]`;
}

/**
 * What the model reads when a stored result cannot be found (a wiped store, a lost row): the
 * preview, saying so. A conversation that loses one output goes on, told of the loss, rather
 * than ending the session.
 */
export function lostStoredOutput(preview: string, stored: StoredOutput): string {
  return `${preview}\n[the full output (${stored.bytes} bytes) was lost from the conversation store; only its start is shown above]`;
}
