// A test runner that does what the session workflow will do, mechanically: hold the
// session and turn states, apply events, execute directives (appending messages to a
// conversation store, starting turns, forwarding events, passing turn results up). It
// records every directive in order and reports each broken invariant it sees.
import {
  conversationProblems,
  createTurn,
  findExhaustion,
  NO_LIMITS,
  sessionEventFromTurn,
  sessionMachine,
  turnMachine,
  type Message,
  type SessionDirective,
  type SessionEvent,
  type SessionState,
  type TransitionResult,
  type TurnDirective,
  type TurnEvent,
  type TurnState,
  type Usage,
} from '../../../machines/index';
import { TURN_TOOLS, type Step } from './generators';

function addUsageForTest(a: Usage, b: Usage | undefined): Usage {
  if (b === undefined) return a;
  return { inputTokens: a.inputTokens + b.inputTokens, outputTokens: a.outputTokens + b.outputTokens, costUsd: a.costUsd + b.costUsd, unpricedCalls: a.unpricedCalls + b.unpricedCalls };
}

export type Traced = SessionDirective | TurnDirective;

export class World {
  session: SessionState;
  turn: TurnState | null = null;
  readonly conversation: Message[] = [];
  readonly trace: Traced[] = [];
  readonly violations: string[] = [];
  /** Accepted tool inputs that let a call run: policy allow or human approval. */
  readonly cleared = new Set<string>();
  readonly sessionSteps: Step<SessionState, SessionEvent, SessionDirective>[] = [];
  readonly turnSteps: Step<TurnState, TurnEvent, TurnDirective>[] = [];
  modelCalls = 0;
  turnsStarted = 0;
  messagesAccepted = 0;
  steersRequeued = 0;

  constructor(session: SessionState) {
    this.session = session;
  }

  turnLive(): boolean {
    return this.turn !== null && !turnMachine.isTerminal(this.turn);
  }

  applySession(event: SessionEvent): TransitionResult<SessionState, SessionDirective> {
    const before = this.session;
    const r = sessionMachine.transition(before, event);
    this.sessionSteps.push({ before, event, result: r });
    if (!r.ok) {
      if (r.error.state !== before.status || r.error.event !== event.type) this.violations.push(`error does not name state/event: ${r.error.message}`);
      if (r.error.code === 'table_violation') this.violations.push(r.error.message);
      return r;
    }
    if (event.type === 'user_message') this.messagesAccepted++;
    if (event.type === 'turn_finished') this.steersRequeued += event.result.unappliedSteers.length;
    this.session = r.state;
    for (const d of r.directives) this.runSessionDirective(d);
    return r;
  }

  /** Route an activity result or a human decision to the turn; answers go through the
   *  session, which owns the question, exactly as the workflow routes them. */
  feedTurn(event: TurnEvent): void {
    if (event.type === 'answer') this.applySession({ type: 'answer', text: event.text });
    else this.applyTurn(event);
  }

  applyTurn(event: TurnEvent): TransitionResult<TurnState, TurnDirective> | null {
    if (this.turn === null) return null;
    const r = turnMachine.transition(this.turn, event);
    this.turnSteps.push({ before: this.turn, event, result: r });
    if (!r.ok) {
      if (r.error.code === 'table_violation') this.violations.push(r.error.message);
      return r;
    }
    if (event.type === 'tool' && (event.event.type === 'approved' || (event.event.type === 'policy_decided' && event.event.decision === 'allow'))) {
      this.cleared.add(event.callId);
    }
    this.turn = r.state;
    for (const d of r.directives) this.runTurnDirective(this.turn.config.turnId, d);
    return r;
  }

  private runSessionDirective(d: SessionDirective): void {
    this.trace.push(d);
    if (d.type === 'start_turn') {
      if (this.turnLive()) this.violations.push(`start_turn ${d.turnId} while turn ${this.turn?.config.turnId} is in flight`);
      this.turnsStarted++;
      this.turn = createTurn({ turnId: d.turnId, limits: d.limits, ...TURN_TOOLS, approvalTimeoutMs: 5_000, maxParallelTools: 2 });
      if (this.applyTurn({ type: 'start', text: d.text })?.ok !== true) this.violations.push(`turn ${d.turnId} refused to start`);
    } else if (d.type === 'forward_to_turn') {
      if (this.turn?.config.turnId !== d.turnId || !this.turnLive()) this.violations.push(`forward to ${d.turnId}, which is not in flight`);
      else if (this.applyTurn(d.event)?.ok !== true) this.violations.push(`turn refused forwarded ${d.event.type}`);
    }
  }

  private runTurnDirective(turnId: string, d: TurnDirective): void {
    this.trace.push(d);
    if (d.type === 'append_messages') {
      this.conversation.push(...d.messages);
    } else if (d.type === 'call_model') {
      this.modelCalls++;
      const problems = conversationProblems(this.conversation, { continuation: d.continuation === true });
      if (problems.length > 0) this.violations.push(`invalid conversation at model call: ${problems.join('; ')}`);
      const limits = this.session.config.limits;
      const spent = addUsageForTest(this.session.usage, this.turn?.usage);
      const exhausted = findExhaustion({ ...NO_LIMITS, inputTokens: limits.inputTokens, outputTokens: limits.outputTokens, costUsd: limits.costUsd }, { usage: spent });
      if (exhausted !== null) this.violations.push(`model called with the ${exhausted.limit} budget exhausted`);
      if (limits.stepsPerTurn !== null && d.step > limits.stepsPerTurn) this.violations.push(`step ${d.step} beyond the limit ${limits.stepsPerTurn}`);
    } else if (d.type === 'finish' || d.type === 'ask_human') {
      const event = sessionEventFromTurn(turnId, d);
      if (event !== null && !this.applySession(event).ok) this.violations.push(`session refused ${event.type} from turn ${turnId}`);
    }
  }

  /** Invariants that hold between external events. */
  checkQuiescent(): void {
    const s = this.session;
    if (this.turnLive() && s.turnId !== this.turn?.config.turnId) this.violations.push(`turn ${this.turn?.config.turnId} live but session says ${s.turnId}`);
    if (s.turnId !== null && !this.turnLive()) this.violations.push(`session waits for turn ${s.turnId}, which is not live`);
    if ((s.status === 'processing' || s.status === 'awaiting_input') && s.turnId === null) this.violations.push(`${s.status} without a turn`);
    const exhausted = findExhaustion(s.config.limits, { usage: s.usage, turns: s.turns, clockExpired: s.clockExpired });
    // `initializing` may start with a zero budget: nothing can run before it suspends.
    if (exhausted !== null && !['initializing', 'suspended', 'closing', 'closed', 'failed'].includes(s.status)) {
      this.violations.push(`${exhausted.limit} budget exhausted in state ${s.status}`);
    }
  }
}
