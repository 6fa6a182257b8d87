// Builds the final Message from raw stream events, keeping every content block exactly
// as the API sent it: text, tool input (re-assembled from its JSON fragments), thinking
// with its signature untouched, and block types this code has never heard of.
import type Anthropic from '@anthropic-ai/sdk';

type Block = Record<string, unknown> & { type: string };

/** A tool_use block cut by `max_tokens`: its input JSON never closed. */
export interface CutToolUse {
  index: number;
  id: string;
  name: string;
  partialJson: string;
}

export class MessageAccumulator {
  private message: Anthropic.Message | null = null;
  private readonly blocks: Block[] = [];
  private readonly jsonBuffers = new Map<number, string>();
  /** Tool input that did not parse, by block index; an error unless the stop is max_tokens. */
  private readonly brokenJson = new Map<number, { json: string; error: Error }>();
  private stopped = false;
  private sawDeltaUsage = false;
  /** Characters of text, thinking and tool input streamed: output estimate when the stream is cut. */
  private streamedChars = 0;

  /** The stream reached `message_stop`: the message is whole. */
  get complete(): boolean {
    return this.stopped;
  }

  get started(): boolean {
    return this.message !== null;
  }

  apply(event: Anthropic.RawMessageStreamEvent): void {
    switch (event.type) {
      case 'message_start':
        this.message = { ...event.message, content: [] };
        return;
      case 'content_block_start':
        this.blocks[event.index] = { ...(event.content_block as unknown as Block) };
        return;
      case 'content_block_delta':
        this.applyDelta(event.index, event.delta);
        return;
      case 'content_block_stop':
        this.finishBlock(event.index);
        return;
      case 'message_delta': {
        const message = this.require();
        message.stop_reason = event.delta.stop_reason;
        message.stop_sequence = event.delta.stop_sequence;
        // A refusal's category and explanation arrive here.
        if (event.delta.stop_details !== undefined) message.stop_details = event.delta.stop_details;
        // message_delta usage is cumulative: fields present replace, absent ones stay.
        const usage = event.usage as unknown as Record<string, unknown>;
        const target = message.usage as unknown as Record<string, unknown>;
        for (const [key, value] of Object.entries(usage)) if (value !== null && value !== undefined) target[key] = value;
        this.sawDeltaUsage = true;
        return;
      }
      case 'message_stop':
        this.stopped = true;
        return;
    }
  }

  /**
   * The final message; only once `complete`. A tool_use whose input JSON broke off is
   * left out and reported as `cut` when the stop reason is `max_tokens` (the API's
   * truncation); with any other stop reason broken JSON is a malformed response.
   */
  result(): { message: Anthropic.Message; cut: CutToolUse | null } {
    const message = this.require();
    if (!this.stopped) throw new Error('the message is not complete before message_stop');
    let cut: CutToolUse | null = null;
    for (const [index, broken] of this.brokenJson) {
      if (message.stop_reason !== 'max_tokens') throw broken.error;
      const block = this.blocks[index];
      const field = (value: unknown): string => (typeof value === 'string' ? value : '');
      cut = { index, id: field(block?.id), name: field(block?.name), partialJson: broken.json };
    }
    const content = this.blocks.filter((block, index) => block !== undefined && !this.brokenJson.has(index));
    return { message: { ...message, content: content as unknown as Anthropic.ContentBlock[] }, cut };
  }

  /**
   * What this attempt was billed for so far: input from message_start, output from the
   * last message_delta — or, when the stream was cut before it, about 4 characters a
   * token of what arrived (marked estimated). Null before message_start.
   */
  spent(): { usage: Anthropic.Usage; estimated: boolean } | null {
    if (this.message === null) return null;
    const usage = { ...this.message.usage };
    if (this.sawDeltaUsage) return { usage, estimated: false };
    return { usage: { ...usage, output_tokens: Math.max(usage.output_tokens, Math.ceil(this.streamedChars / 4)) }, estimated: true };
  }

  /** The text and thinking streamed so far, per block: what a watcher is shown live. */
  streamedBlocks(): Array<{ index: number; block: 'text' | 'thinking'; text: string }> {
    return this.blocks.flatMap((b, index): Array<{ index: number; block: 'text' | 'thinking'; text: string }> => {
      if (b?.type === 'text' && typeof b.text === 'string') return [{ index, block: 'text' as const, text: b.text }];
      if (b?.type === 'thinking' && typeof b.thinking === 'string') return [{ index, block: 'thinking' as const, text: b.thinking }];
      return [];
    });
  }

  private require(): Anthropic.Message {
    if (!this.message) throw new Error(`stream event before message_start`);
    return this.message;
  }

  private applyDelta(index: number, delta: Anthropic.RawContentBlockDelta): void {
    const block = this.blocks[index];
    if (!block) throw new Error(`content_block_delta for block ${index} before its content_block_start`);
    switch (delta.type) {
      case 'text_delta':
        this.streamedChars += delta.text.length;
        block.text = (typeof block.text === 'string' ? block.text : '') + delta.text;
        return;
      case 'input_json_delta':
        this.streamedChars += delta.partial_json.length;
        this.jsonBuffers.set(index, (this.jsonBuffers.get(index) ?? '') + delta.partial_json);
        return;
      case 'thinking_delta':
        this.streamedChars += delta.thinking.length;
        block.thinking = (typeof block.thinking === 'string' ? block.thinking : '') + delta.thinking;
        return;
      case 'signature_delta':
        // The signature arrives whole; it is opaque and must go back to the API verbatim.
        block.signature = delta.signature;
        return;
      case 'citations_delta':
        block.citations = [...((block.citations as unknown[] | null | undefined) ?? []), delta.citation];
        return;
      default: {
        const unknownDelta: never = delta;
        void unknownDelta;
      }
    }
  }

  private finishBlock(index: number): void {
    const json = this.jsonBuffers.get(index);
    const block = this.blocks[index];
    if (json === undefined || !block) return;
    this.jsonBuffers.delete(index);
    try {
      block.input = json.trim() === '' ? {} : (JSON.parse(json) as unknown);
    } catch (error) {
      // Decided at message_delta: max_tokens means truncation, anything else malformed output.
      this.brokenJson.set(index, { json, error: error as Error });
    }
  }
}
