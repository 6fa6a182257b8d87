// Large tool results kept once, in the conversation store (machines/stored-output.ts): the
// tool activity stores the text and returns a preview and its reference; the model activity
// puts the text back into the request. The text is a segment of one item, so it is hashed,
// sealed with the store's keys, cached and checked as every segment is.
import type Anthropic from '@anthropic-ai/sdk';
import { appendSegment, checkStoreIdentity, readConversation, storeFor, storeKeys, type StoreKeys } from './conversation-store';
import { ConversationStoreError } from './store/errors';
import type { ObjectStore } from './store/interface';
import { lostStoredOutput, STORE_OUTPUT_ABOVE_BYTES, storedPreview, type StoredOutput } from '../machines/stored-output';
import type { ToolResult } from '../machines/tool-result';

/** Where a tool's large result goes: the session's store (as the model activity's `ref` names it). */
export interface StoreOutputTarget {
  store: string;
  storeId?: string;
}

/**
 * The result as the workflow keeps it: unchanged when short, else a preview and the stored
 * text's reference. A store that cannot take it now leaves the result whole (history holds
 * it, as before): a tool that ran is never lost to a store outage.
 */
export async function storeLargeOutput(result: ToolResult, target: StoreOutputTarget | undefined, env: NodeJS.ProcessEnv = process.env, warn: (message: string, error: unknown) => void = () => undefined): Promise<ToolResult> {
  if (target === undefined || result.stored !== undefined) return result;
  const bytes = Buffer.byteLength(result.content, 'utf8');
  if (bytes <= STORE_OUTPUT_ABOVE_BYTES) return result;
  try {
    const store = storeFor(target.store, env);
    await checkStoreIdentity(store, target.storeId);
    const id = await appendSegment(store, null, [result.content], await storeKeys(env));
    if (id === null) return result;
    return { ...result, content: storedPreview(result.content, bytes), stored: { id, bytes } };
  } catch (error) {
    warn('could not store a large tool result; it stays in the workflow history', error);
    return result;
  }
}

/** The stored text of a result, or null when the store no longer has it. */
async function readStored(store: ObjectStore, stored: StoredOutput, keys: StoreKeys): Promise<string | null> {
  try {
    const [text] = await readConversation<unknown>(store, stored.id, keys);
    return typeof text === 'string' ? text : null;
  } catch (error) {
    if (error instanceof ConversationStoreError && error.fault === 'missing') return null;
    throw error;
  }
}

/**
 * The messages as the API takes them: every tool_result with `keel_stored` gets its whole
 * text back, and the field (Keel's own) is dropped. A message without one is returned as it
 * is (the same object: the request's bytes stay the same whether a result was stored or not).
 */
export async function resolveStoredOutputs(messages: readonly Anthropic.MessageParam[], store: ObjectStore, keys: StoreKeys): Promise<Anthropic.MessageParam[]> {
  const out: Anthropic.MessageParam[] = [];
  for (const message of messages) {
    if (typeof message.content === 'string' || !message.content.some(isStoredResult)) {
      out.push(message);
      continue;
    }
    const content: Anthropic.ContentBlockParam[] = [];
    for (const block of message.content) {
      if (!isStoredResult(block)) {
        content.push(block);
        continue;
      }
      const { keel_stored: stored, ...rest } = block;
      const preview = typeof rest.content === 'string' ? rest.content : '';
      const text = await readStored(store, stored, keys);
      content.push({ ...rest, content: text ?? lostStoredOutput(preview, stored) });
    }
    out.push({ ...message, content } as Anthropic.MessageParam);
  }
  return out;
}

type StoredResultBlock = Anthropic.ToolResultBlockParam & { keel_stored: StoredOutput };

function isStoredResult(block: Anthropic.ContentBlockParam): block is StoredResultBlock {
  return block.type === 'tool_result' && 'keel_stored' in block && block.keel_stored !== undefined;
}
