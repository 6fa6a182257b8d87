// approve / deny in a session act on the turn's tool call; the session machine has no say in
// them. A session-scope approval is remembered as exactly the call the human saw (or the
// rule the human gave), for the rest of the session.
import { setHandler } from '@temporalio/workflow';
import type { TransitionError, TurnEvent } from '../machines/index';
import { approvalFrom, EXACT_APPROVALS_PATCH, rememberApproval, unknownCallMessage, type SessionApproval } from '../machines/policy';
import { approveSchema, approveSignal, approveUpdate, denySchema, denySignal, denyUpdate, type ControlResult, type PendingApproval } from './definitions';
import { approverLabel, parsePayload as parse } from './payloads';
import { machineRefusal, refusal, validated } from './refusal';
import type { TurnRunner } from './turn-runner';
import { hasPatch } from './run-format';


export interface ApprovalHost {
  turns: TurnRunner;
  pending(): PendingApproval[];
  rejected(source: string, error: TransitionError): void;
  post(work: () => void): void;
  now(): number;
  status(): ControlResult;
  approvals(): SessionApproval[];
  remember(next: SessionApproval[]): void;
}

type Approval = { callId: string; event: TurnEvent; rule: string | null; remember: SessionApproval | null; legacy?: string };

export function sessionApprovalHandlers(h: ApprovalHost): void {
  const turnRefusal = (source: string, event: string, error: unknown): void =>
    h.rejected(source, { code: 'guard_failed', machine: 'turn', state: h.turns.state?.status ?? 'none', event, message: (error as Error).message });

  /** The answer decided by approvalFrom (machines/approval.ts); throws its refusal, with its code. */
  const approvalEvent = (raw: unknown): Approval => {
    const input = parse(approveSchema, raw, 'approve');
    const approver = approverLabel(input);
    const d = approvalFrom(input, h.pending(), approver);
    if (!d.ok) throw refusal(d.code, d.message);
    const event: TurnEvent = { type: 'tool', callId: d.callId, event: { type: 'approved', approver, scope: d.scope } };
    // The grant time is filled in when applied.
    return { callId: d.callId, event, rule: d.label, remember: d.remember, ...(d.legacyRule !== null ? { legacy: d.legacyRule } : {}) };
  };
  // Histories recorded before approvals were exact replay with the rule they remembered then.
  const replayable = (a: Approval): Approval =>
    a.legacy === undefined || hasPatch(EXACT_APPROVALS_PATCH) ? a : { ...a, rule: a.legacy, remember: { rule: a.legacy, grantedBy: 'human' } };
  const applyApproval = (source: string, a: { event: TurnEvent; remember: SessionApproval | null }) => {
    const r = h.turns.apply(a.event);
    if (!r.ok) return h.rejected(source, r.error);
    if (a.remember === null) return;
    h.remember(rememberApproval(h.approvals(), { ...a.remember, grantedAt: new Date(h.now()).toISOString() }));
    // The files this call runs bind the approval when it runs (workflows/turn-runner.ts).
    if (a.event.type === 'tool') h.turns.approvedForSession(a.event.callId, a.remember);
  };
  setHandler(approveSignal, (raw) =>
    h.post(() => {
      try {
        applyApproval('signal approve', replayable(approvalEvent(raw)));
      } catch (error) {
        turnRefusal('signal approve', 'approved', error);
      }
    }),
  );
  setHandler(
    approveUpdate,
    (raw) => {
      const a = replayable(approvalEvent(raw));
      h.post(() => applyApproval('update approve', a));
      return { status: h.status().status, callId: a.callId, sessionRule: a.rule };
    },
    {
      validator: (raw) => {
        const r = h.turns.check(validated(() => approvalEvent(raw)).event);
        if (r && !r.ok) throw machineRefusal(r.error);
      },
    },
  );

  const denialEvent = (raw: unknown): TurnEvent => {
    const input = parse(denySchema, raw, 'deny');
    if (!h.pending().some((p) => p.callId === input.callId)) throw refusal('unknown_call', unknownCallMessage(input.callId, h.pending()));
    return { type: 'tool', callId: input.callId, event: { type: 'denied', ...(input.reason ? { reason: input.reason } : {}) } };
  };
  const deny = (source: string, event: TurnEvent) => {
    const r = h.turns.apply(event);
    if (!r.ok) h.rejected(source, r.error);
  };
  setHandler(denySignal, (raw) =>
    h.post(() => {
      try {
        deny('signal deny', denialEvent(raw));
      } catch (error) {
        turnRefusal('signal deny', 'denied', error);
      }
    }),
  );
  setHandler(
    denyUpdate,
    (raw) => {
      const event = denialEvent(raw);
      h.post(() => deny('update deny', event));
      return h.status();
    },
    {
      validator: (raw) => {
        const r = h.turns.check(validated(() => denialEvent(raw)));
        if (r && !r.ok) throw machineRefusal(r.error);
      },
    },
  );
}
