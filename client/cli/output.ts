// Terminal output of the CLI: colours and a spinner only on a TTY (and never with --json or
// NO_COLOR), plain lines otherwise, so logs and pipes stay clean.
import readline from 'node:readline';
import type { ToolFacts } from '../../machines/tool-result';

export const EXIT = {
  ok: 0,
  /** Something failed (a bug, a refused start, a workflow that failed). */
  error: 1,
  /** Bad arguments (commander's own code too). */
  usage: 2,
  /** The goal ended without being met (stopped: cancelled, budget, blocked...). */
  notMet: 3,
  /** No goal or session with that id. */
  notFound: 4,
  /** The workflow refused the request (UpdateRejectedError); the reason is printed. */
  rejected: 5,
  /** Temporal cannot be reached. */
  unreachable: 6,
  /** Ctrl-C twice: the CLI left, the goal keeps running. */
  detached: 130,
} as const;

export class Output {
  readonly tty: boolean;
  readonly color: boolean;
  private spinnerTimer: NodeJS.Timeout | undefined;
  private spinnerText = '';
  private frame = 0;
  /** True while model text is being written on the current line. */
  private midLine = false;

  constructor(
    readonly json: boolean,
    private readonly stream: NodeJS.WriteStream = process.stdout,
  ) {
    this.tty = Boolean(stream.isTTY) && !json;
    this.color = this.tty && !process.env.NO_COLOR;
  }

  private paint(code: number, text: string): string {
    return this.color ? `\x1b[${code}m${text}\x1b[0m` : text;
  }
  dim = (t: string) => this.paint(2, t);
  bold = (t: string) => this.paint(1, t);
  green = (t: string) => this.paint(32, t);
  red = (t: string) => this.paint(31, t);
  yellow = (t: string) => this.paint(33, t);
  cyan = (t: string) => this.paint(36, t);

  /** A whole line (ends any streamed text first). */
  line(text = ''): void {
    if (this.json) return;
    this.clearSpinner();
    if (this.midLine) {
      this.stream.write('\n');
      this.midLine = false;
    }
    this.stream.write(`${text}\n`);
    this.drawSpinner();
  }

  /** Streamed text, written as it arrives. */
  text(chunk: string): void {
    if (this.json || chunk === '') return;
    this.clearSpinner();
    this.stream.write(chunk);
    this.midLine = !chunk.endsWith('\n');
  }

  /** One JSON value per line (with --json). */
  emit(value: unknown): void {
    this.stream.write(`${JSON.stringify(value)}\n`);
  }

  spinner(text: string | null): void {
    if (!this.tty) return;
    if (text === null) {
      this.clearSpinner();
      clearInterval(this.spinnerTimer);
      this.spinnerTimer = undefined;
      this.spinnerText = '';
      return;
    }
    this.spinnerText = text;
    if (!this.spinnerTimer) this.spinnerTimer = setInterval(() => this.drawSpinner(), 120);
  }

  private drawSpinner(): void {
    if (!this.tty || !this.spinnerText || this.midLine) return;
    const frames = '⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏';
    readline.clearLine(this.stream, 0);
    readline.cursorTo(this.stream, 0);
    this.stream.write(this.dim(`${frames[this.frame++ % frames.length]} ${this.spinnerText}`));
  }

  private clearSpinner(): void {
    if (!this.tty || !this.spinnerText || this.midLine) return;
    readline.clearLine(this.stream, 0);
    readline.cursorTo(this.stream, 0);
  }
}

/** How a turn that did not simply finish is shown: a refusal with the API's category and
 *  explanation, or an answer cut at max_tokens. Null for any other event. */
export function turnNotice(e: { kind: string; [key: string]: unknown }): string | null {
  const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
  if (e.kind === 'turn.refused') {
    const category = text(e.category);
    const explanation = text(e.explanation);
    return `[refused${category !== null ? ` (${category})` : ''}${explanation !== null ? `: ${explanation}` : ': the model declined to answer'}]`;
  }
  if (e.kind === 'turn.truncated') {
    const limit = typeof e.maxTokens === 'number' ? ` at max_tokens ${e.maxTokens}` : ' at max_tokens';
    return e.inToolUse === true ? `[truncated${limit} inside a tool call; the call was not run]` : `[truncated${limit}: the answer is incomplete]`;
  }
  return null;
}

/** One line for a finished tool call. A call stopped at a sandbox limit says so, and which
 *  limit, in its own colour: it is neither the command's failure nor a success. */
export function toolResultLine(out: Output, e: { status: string; output: string; facts?: ToolFacts }): string {
  if (e.status === 'limit') {
    const which = e.facts?.kind === 'command' && e.facts.limit !== undefined ? e.facts.limit : 'sandbox';
    const said = /\[limit: ([^\n]*)\]\s*$/.exec(e.output)?.[1];
    return out.yellow(`  ⛔ limit (${which})${said !== undefined ? `: ${said.slice(0, 200)}` : ''}`);
  }
  return out.dim(`  ${e.status === 'success' ? '✓' : '✘'} ${e.output.split('\n')[0]?.slice(0, 100) ?? ''}`);
}

/** A plain text table. */
export function table(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  ').trimEnd());
}

/** Lines from stdin, one at a time, that work the same with a terminal or a pipe. */
export class LineReader {
  private readonly rl: readline.Interface;
  private readonly buffered: string[] = [];
  /** Questions waiting for a line, newest last, each with what to print to ask it again. */
  private readonly waiting: Array<{ resolve: (line: string | null) => void; again: string | null }> = [];
  private ended = false;

  constructor(
    input: NodeJS.ReadableStream = process.stdin,
    output?: NodeJS.WritableStream,
    /** Where prompts go (stdout). */
    private readonly echo: (text: string) => void = (text) => void process.stdout.write(text),
  ) {
    this.rl = readline.createInterface({ input, ...(output ? { output, terminal: true } : { terminal: false }) });
    this.rl.on('line', (line) => {
      // The newest question gets the answer (e.g. Ctrl-C's "cancel?" over a pending prompt).
      const w = this.waiting.pop();
      if (w) {
        w.resolve(line);
        // A question asked over another one is answered: ask the one below again, or the person
        // sees no question while Keel still waits for their answer (an approval, after "cancel? n").
        const below = this.waiting.at(-1);
        if (below?.again) this.echo(below.again);
      } else this.buffered.push(line);
    });
    this.rl.on('close', () => {
      this.ended = true;
      for (const w of this.waiting.splice(0)) w.resolve(null);
    });
  }

  get interface(): readline.Interface {
    return this.rl;
  }

  /**
   * The next line, or null at the end of input. `question` is the text the prompt answers,
   * printed again (with the prompt) when a later question asked over this one is answered.
   */
  next(prompt?: string, question?: string): Promise<string | null> {
    if (prompt !== undefined) this.echo(prompt);
    const line = this.buffered.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (this.ended) return Promise.resolve(null);
    const again = question === undefined && prompt === undefined ? null : `${question === undefined ? '' : `${question}\n`}${prompt ?? ''}`;
    return new Promise((resolve) => this.waiting.push({ resolve, again }));
  }

  close(): void {
    this.rl.close();
  }
}
