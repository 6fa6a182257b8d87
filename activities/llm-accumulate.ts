// Builds the final Message from raw stream events, keeping every content block exactly
// as the API sent it: text, tool input (re-assembled from its JSON fragments), thinking
// with its signature untouched, and block types this code has never heard of.
import type Anthropic from '@anthropic-ai/sdk';

type Block = Record<string, unknown> & { type: string };

export class MessageAccumulator {
  private message: Anthropic.Message | null = null;
  private readonly blocks: Block[] = [];
  private readonly jsonBuffers = new Map<number, string>();
  private stopped = false;

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
        // message_delta usage is cumulative: fields present replace, absent ones stay.
        const usage = event.usage as unknown as Record<string, unknown>;
        const target = message.usage as unknown as Record<string, unknown>;
        for (const [key, value] of Object.entries(usage)) if (value !== null && value !== undefined) target[key] = value;
        return;
      }
      case 'message_stop':
        this.stopped = true;
        return;
    }
  }

  /** The final message; only once `complete`. */
  result(): Anthropic.Message {
    const message = this.require();
    if (!this.stopped) throw new Error('the message is not complete before message_stop');
    return { ...message, content: this.blocks.filter((block) => block !== undefined) as unknown as Anthropic.ContentBlock[] };
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
        block.text = (typeof block.text === 'string' ? block.text : '') + delta.text;
        return;
      case 'input_json_delta':
        this.jsonBuffers.set(index, (this.jsonBuffers.get(index) ?? '') + delta.partial_json);
        return;
      case 'thinking_delta':
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
    // Malformed tool input is the server's fault: SyntaxError is classified as retryable.
    block.input = json.trim() === '' ? {} : (JSON.parse(json) as unknown);
    this.jsonBuffers.delete(index);
  }
}
