// The session's `transcript` query: a page of the conversation, with the turns the model
// refused beside it (a refusal adds no message, so they come from the event log).
import type { LogEntry, TranscriptPage } from './definitions';
import { heldEvents } from './event-log';
import type { KeelStream } from './keel-stream';
import type { ConversationLog } from './runtime';

export function transcriptPage(conversation: ConversationLog, stream: KeelStream, input: { from?: number; limit?: number }): TranscriptPage {
  const limit = input.limit ?? 50;
  const from = input.from ?? Math.max(conversation.first, conversation.total - limit);
  const refusals: TranscriptPage['refusals'] = [];
  for (const entry of heldEvents<LogEntry>(stream)) {
    if (entry.kind === 'turn.refused') refusals.push({ turnId: entry.turnId, at: entry.at, category: entry.category, explanation: entry.explanation });
  }
  return { total: conversation.total, firstAvailable: conversation.first, from: Math.max(from, conversation.first), messages: conversation.page(from, limit), head: conversation.head, refusals };
}
