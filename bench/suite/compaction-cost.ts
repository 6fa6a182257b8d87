// What a compacting session's summaries cost, and what they would have cost the old way
// (before issue 47): a request of its own — another system prompt, the conversation before
// the cut as one text message, no breakpoints — so every input token was paid at 1×. The
// old requests are rebuilt from the summary requests the stand-in recorded (the same
// conversation and the same cut) and billed by a fresh stand-in cache; their output is
// the recorded output. Every other request of the session is the same either way.
import type Anthropic from '@anthropic-ai/sdk';
import { COMPACTION_MARK, transcriptSummaryRequest } from '../../activities/conversation-compaction';
import { type BilledRequest, replay, sessionCost, type SessionCost, withoutBreakpoints } from './cost';

type Json = Record<string, unknown>;

/** The instruction a summary request ends with, or null for any other request. */
function instructionOf(body: Json): string | null {
  const last = (body.messages as Anthropic.MessageParam[] | undefined)?.at(-1);
  if (last?.role !== 'user' || typeof last.content === 'string') return null;
  const block = last.content.at(-1);
  return block?.type === 'text' && block.text.includes(COMPACTION_MARK) ? block.text : null;
}

export const isSummaryRequest = (r: BilledRequest): boolean => instructionOf(r.body) !== null;

/** The old way's request for the same summary: the conversation before the instruction, cut where it says. */
export function oldSummaryRequest(r: BilledRequest): BilledRequest {
  const text = instructionOf(r.body)!;
  const cut = Number(/first (\d+) messages/.exec(text)?.[1]);
  if (!Number.isInteger(cut)) throw new Error(`no cut in the summary instruction: ${text.slice(0, 120)}`);
  const messages = withoutBreakpoints(r.body.messages as Anthropic.MessageParam[]);
  const last = messages.at(-1)!;
  const rest = (last.content as Anthropic.ContentBlockParam[]).slice(0, -1);
  const conversation: Anthropic.MessageParam[] = rest.length > 0 ? [...messages.slice(0, -1), { role: 'user', content: rest }] : messages.slice(0, -1);
  const body = transcriptSummaryRequest(String(r.body.model), conversation, cut) as unknown as Json;
  return replay([{ body, usage: r.usage }], (b) => b)[0]!;
}

export interface CompactionCost {
  turns: number;
  requests: number;
  compactions: number;
  /** The session as billed (summaries continuing the cached prefix). */
  session: SessionCost;
  summaries: SessionCost;
  /** The same session with each summary made the old way. */
  oldSession: SessionCost;
  oldSummaries: SessionCost;
}

export function compactionCost(model: string, turns: number, requests: readonly BilledRequest[]): CompactionCost {
  const summaries = requests.filter(isSummaryRequest);
  const old = requests.map((r) => (isSummaryRequest(r) ? oldSummaryRequest(r) : r));
  return {
    turns,
    requests: requests.length,
    compactions: summaries.length,
    session: sessionCost(model, requests),
    summaries: sessionCost(model, summaries),
    oldSession: sessionCost(model, old),
    oldSummaries: sessionCost(model, summaries.map(oldSummaryRequest)),
  };
}
