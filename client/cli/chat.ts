// `keel chat`: a REPL on a session. Replies stream as the model writes them; tool calls
// that need approval are asked inline (y / n / always); a question of the model is answered
// by the next line. /interrupt (or Ctrl-C during a reply), /steer TEXT, /pause, /resume,
// /close; /quit or the end of input leaves the session open. Lines are read while a reply
// runs, so a piped script works the same as a terminal.
import os from 'node:os';
import type { Json } from '../../machines/index';
import { suggestedRuleFor } from '../../machines/policy';
import { UpdateRejectedError } from '../errors';
import type { SessionHandle } from '../session-handle';
import { callLines, type WaitingCall, workspaceOf } from './call-view';
import { CliExit, withClient } from './common';
import { showPaged } from './pager';
import { EXIT, LineReader, type Output, toolResultLine, turnNotice } from './output';
import { isSubAgentEvent, subAgentLine } from './sub-agent-lines';
import { MODEL_TOPIC } from '../../workflows/protocol/topics';

export interface ChatOptions {
  session?: string;
  workspace?: string;
  mode?: string;
  json?: boolean;
}

/** Who answered: recorded with every approval, so the log says which person it was. */
const APPROVER = `keel chat (${os.userInfo().username})`;

const HELP =
  'commands: /interrupt  /steer TEXT  /pause  /resume  /close  /status  /quit   ' +
  '(approvals: y / n / always — always offers a rule to remember for the session, which you can edit)';

export function chatCommand(o: ChatOptions): Promise<void> {
  return withClient(o.json, async (keel, out) => {
    const mode = o.mode;
    if (mode !== undefined && !['read-only', 'ask', 'auto-edit', 'full-auto'].includes(mode)) throw new CliExit(EXIT.usage, '--mode must be read-only, ask, auto-edit or full-auto');
    const session = o.session
      ? keel.getSession(o.session)
      : await keel.startSession({ ...(o.workspace ? { workspace: o.workspace } : {}), ...(mode ? { policy: { mode: mode as 'ask' } } : {}) });
    const state = await session.state();
    if (out.json) out.emit({ session: session.id, status: state.status });
    else out.line(out.dim(`session ${session.id} (${state.status}). ${HELP}`));
    const chat = new Chat(session, out);
    // What already waits when the REPL attaches is asked again.
    for (const p of state.pendingApprovals) await chat.waitingApproval(p);
    if (state.question) chat.waitingQuestion(state.question.question);
    return chat.run();
  });
}

class Chat {
  private readonly approvals: string[] = [];
  /** Tool calls seen, for the rule `always` offers. */
  private readonly calls = new Map<string, { tool: string; input: unknown }>();
  /** After `always`: the next line edits the rule to remember (Enter keeps it). */
  private editing: { callId: string; suggested: string } | null = null;
  private question: string | null = null;
  private turnRunning = false;
  private workspace: string | null | undefined;
  private closed = false;
  private readonly reader = new LineReader();
  private turnIdle: Promise<void> = Promise.resolve();
  private markIdle: () => void = () => undefined;

  constructor(
    private readonly session: SessionHandle,
    private readonly out: Output,
  ) {}

  async run(): Promise<number> {
    const abort = new AbortController();
    const following = this.follow(await this.session.streamOffset(), abort.signal);
    const onSigint = () => {
      if (this.turnRunning) void this.control(() => this.session.interrupt('Ctrl-C'));
      else {
        this.reader.close();
      }
    };
    process.on('SIGINT', onSigint);
    try {
      for (;;) {
        const line = await this.reader.next(this.out.tty ? (this.turnRunning ? '' : '› ') : undefined);
        if (line === null) break;
        const text = line.trim();
        if (!text && !this.editing) continue;
        if (text === '/quit' || text === '/exit') break;
        if (!(await this.handle(text))) break;
        if (this.closed) break;
      }
      // End of input: a reply in progress is shown to its end (unless it waits for a person).
      await this.settled();
      if (!this.closed) {
        const s = await this.session.state();
        this.closed = s.status === 'closed' || s.status === 'failed';
      }
      if (this.closed) await this.session.result().catch(() => undefined);
      if (!this.out.json) this.out.line(this.closed ? `session ${this.session.id} closed` : `session ${this.session.id} stays open: keel chat --session ${this.session.id}`);
      return EXIT.ok;
    } finally {
      process.off('SIGINT', onSigint);
      abort.abort();
      await following.catch(() => undefined);
      this.reader.close();
    }
  }

  /** Handles one line; false ends the REPL. */
  private async handle(text: string): Promise<boolean> {
    const s = this.session;
    if (this.editing) {
      const { callId, suggested } = this.editing;
      this.editing = null;
      const rule = text === '' ? suggested : text;
      await this.control(() => (rule === 'exact' ? this.approveExact(callId) : s.approve(callId, { scope: 'session', rule, approver: APPROVER })));
      return true;
    }
    if (this.approvals.length > 0 && /^(y|yes|n|no|a|always)$/i.test(text)) {
      const callId = this.approvals.shift()!;
      const answer = text.toLowerCase();
      if (answer.startsWith('n')) await this.control(() => s.deny(callId, 'denied in keel chat'));
      else if (answer.startsWith('y')) await this.control(() => s.approve(callId, { scope: 'once', approver: APPROVER }));
      else {
        // `always` grants what the person reads here, nothing wider: a rule they can edit,
        // or the exact call when no rule can say it.
        const call = this.calls.get(callId);
        const suggested = call ? suggestedRuleFor({ tool: call.tool, input: call.input }) : undefined;
        if (suggested === undefined) {
          await this.control(() => this.approveExact(callId));
        } else {
          this.editing = { callId, suggested };
          if (!this.out.json) this.out.line(`  remember for this session: ${this.out.bold(suggested)}\n  Enter keeps it; type another rule (e.g. ${suggested.replace(/\)$/, '*)')}) or "exact" for this exact call only`);
        }
      }
      return true;
    }
    if (this.question !== null && !text.startsWith('/')) {
      this.question = null;
      await this.control(() => s.answer(text));
      return true;
    }
    if (text.startsWith('/')) {
      const [command = '', ...rest] = text.split(/\s+/);
      const arg = rest.join(' ');
      switch (command) {
        case '/interrupt':
          await this.control(() => s.interrupt(arg || 'interrupted in keel chat'));
          return true;
        case '/steer':
          await this.control(() => s.steer(arg));
          return true;
        case '/pause':
          await this.control(() => s.pause(arg || undefined));
          return true;
        case '/resume':
          await this.control(() => s.resume());
          return true;
        case '/close':
          await this.control(() => s.close(arg || 'closed in keel chat'));
          this.closed = true;
          return true;
        case '/status': {
          const st = await s.state();
          this.info(`status ${st.status}, ${st.usage.turns} turns, ${st.pendingApprovals.length} waiting, $${st.usage.usage.costUsd.toFixed(4)}`);
          return true;
        }
        case '/help':
          this.info(HELP);
          return true;
        default:
          this.info(`unknown command ${command}. ${HELP}`);
          return true;
      }
    }
    this.beginTurn();
    try {
      const sent = await s.post(text);
      if (sent.queued) this.info(`queued (${sent.queueLength} waiting)`);
    } catch (error) {
      if (!(error instanceof UpdateRejectedError)) throw error;
      this.info(`not sent: ${error.reason}`);
      this.markIdle();
    }
    return true;
  }

  private async approveExact(callId: string): Promise<void> {
    const answer = await this.session.approve(callId, { scope: 'session', approver: APPROVER });
    if (!this.out.json && answer.sessionRule) this.info(`remembered for this session: ${answer.sessionRule}`);
  }

  /** Shows the whole call (arguments, the diff of an edit) and only then lets `y` answer it. */
  async waitingApproval(call: WaitingCall): Promise<void> {
    this.calls.set(call.callId, { tool: call.name, input: call.input });
    if (!this.out.json) {
      this.workspace ??= await workspaceOf(this.session.workflowHandle);
      await showPaged(await callLines(call, this.workspace), this.out, this.reader.interface);
    }
    this.approvals.push(call.callId);
    if (!this.out.json) this.out.line(`${this.out.yellow('?')} allow ${call.name} ${call.callId}${call.reason ? ` (${call.reason})` : ''}? [y/n/always]`);
  }

  waitingQuestion(question: string): void {
    this.question = question;
    if (!this.out.json) this.out.line(`${this.out.yellow('?')} ${question}`);
  }

  private async settled(): Promise<void> {
    while (this.turnRunning) {
      const st = await this.session.state();
      if (st.status !== 'processing' || st.pendingApprovals.length > 0 || st.question !== null) return;
      await Promise.race([this.turnIdle, new Promise((r) => setTimeout(r, 200))]);
    }
  }

  private beginTurn(): void {
    if (this.turnRunning) return;
    this.turnRunning = true;
    this.turnIdle = new Promise((resolve) => {
      this.markIdle = () => {
        this.turnRunning = false;
        resolve();
      };
    });
  }

  private async control(body: () => Promise<unknown>): Promise<void> {
    try {
      const r = await body();
      if (this.out.json) this.out.emit({ accepted: r });
    } catch (error) {
      if (error instanceof UpdateRejectedError) this.info(`refused: ${error.reason}`);
      else throw error;
    }
  }

  private info(text: string): void {
    if (this.out.json) this.out.emit({ info: text });
    else this.out.line(this.out.dim(text));
  }

  /** Prints the stream from `from` (the end when the REPL began: what came before is history). */
  private async follow(from: number, signal: AbortSignal): Promise<void> {
    const out = this.out;
    let started = false;
    for await (const item of this.session.events({ from, signal })) {
      if (out.json) {
        out.emit(item);
      }
      if (item.topic === MODEL_TOPIC) {
        if (item.data.kind === 'delta' && item.data.block === 'text' && !out.json) {
          if (!started) out.text(out.cyan('keel: '));
          started = true;
          out.text(item.data.text);
        }
        continue;
      }
      const e = item.data;
      if (e.kind === 'turn.started') {
        this.beginTurn();
        started = false;
      } else if (e.kind === 'tool.call') {
        this.calls.set(e.callId, { tool: e.toolName, input: e.arguments });
        if (!out.json) out.line(out.dim(`  ⚙ ${e.toolName} ${JSON.stringify(e.arguments).slice(0, 120)}`));
      } else if (e.kind === 'tool.approval_requested') {
        // The event carries a preview of the arguments; the query, the whole call.
        const full = (await this.session.pendingApprovals()).find((p) => p.callId === e.callId);
        await this.waitingApproval(full ?? { callId: e.callId, name: e.toolName, input: (this.calls.get(e.callId)?.input ?? null) as Json, reason: e.policyReason });
      } else if (e.kind === 'tool.denied' || e.kind === 'tool.approved') {
        this.drop(e.callId);
      } else if (e.kind === 'tool.result') {
        if (!out.json) out.line(toolResultLine(out, e));
      } else if (isSubAgentEvent(e)) {
        if (!out.json) out.line(out.dim(subAgentLine(e)));
      } else if (e.kind === 'session.input_requested') {
        this.waitingQuestion(e.question);
      } else if (e.kind === 'turn.interrupted') {
        if (!out.json) out.line(out.yellow(`[interrupted: ${e.reason}]`));
      } else if (e.kind === 'turn.error') {
        if (!out.json) out.line(out.red(`[error: ${e.message}]`));
      } else if (e.kind === 'turn.refused' || e.kind === 'turn.truncated') {
        if (!out.json) {
          if (started) out.line('');
          started = false;
          out.line(out.yellow(turnNotice(e) ?? ''));
        }
      } else if (e.kind === 'session.paused') {
        this.info(`paused: ${e.reason}`);
      } else if (e.kind === 'session.resumed') {
        this.info('resumed');
      } else if (e.kind === 'session.turn_finished') {
        if (started && !out.json) out.line('');
        started = false;
        this.approvals.length = 0;
        this.question = null;
        if (e.queueLength === 0) this.markIdle();
      } else if (e.kind === 'session.closed') {
        this.closed = true;
        this.markIdle();
        return;
      }
    }
  }

  private drop(callId: string): void {
    const i = this.approvals.indexOf(callId);
    if (i >= 0) this.approvals.splice(i, 1);
  }
}
