// approve / deny in a session act on the turn's tool call; the session machine has no say in
// them. A session-scope approval is remembered as exactly the call the human saw (or the
// rule the human gave), for the rest of the session.
import { patched, setHandler } from '@temporalio/workflow';
import type { TransitionError, TurnEvent } from '../machines/index';
import { describeApproval, EXACT_APPROVALS_PATCH, legacySessionRuleFor, rememberApproval, sessionApprovalFor, type SessionApproval } from '../machines/policy';
import { approveSchema, approveSignal, approveUpdate, denySchema, denySignal, denyUpdate, type ControlResult, type PendingApproval } from './definitions';
import { approverLabel, parsePayload as parse } from './payloads';
import type { TurnRunner } from './turn-runner';

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
  const unknownCall = (callId: string) => {
    const waiting = h.pending().map((p) => p.callId);
    return `unknown call id ${callId}: ${waiting.length === 0 ? 'no tool call is waiting for approval' : `waiting for approval: ${waiting.join(', ')}`}`;
  };
  const turnRefusal = (source: string, event: string, error: unknown): void =>
    h.rejected(source, { code: 'guard_failed', machine: 'turn', state: h.turns.state?.status ?? 'none', event, message: (error as Error).message });

  const approvalEvent = (raw: unknown): Approval => {
    const input = parse(approveSchema, raw, 'approve');
    const call = h.pending().find((p) => p.callId === input.callId);
    if (!call) throw new Error(unknownCall(input.callId));
    const approver = approverLabel(input);
    const event: TurnEvent = { type: 'tool', callId: input.callId, event: { type: 'approved', approver, scope: input.scope ?? 'once' } };
    if (input.scope !== 'session') {
      if (input.rule !== undefined) throw new Error('approve: a rule is remembered only with scope "session"');
      return { callId: input.callId, event, rule: null, remember: null };
    }
    // The exact call unless the human gave a rule; the grant time is filled in when applied.
    const grant = sessionApprovalFor({ tool: call.name, input: call.input }, input.rule, { grantedBy: approver });
    if (!grant.ok) throw new Error(`approve: ${grant.error}`);
    const legacy = input.rule === undefined ? legacySessionRuleFor({ tool: call.name, input: call.input }) : undefined;
    return { callId: input.callId, event, rule: grant.label, remember: grant.approval, ...(legacy ? { legacy } : {}) };
  };
  // Histories recorded before approvals were exact replay with the rule they remembered then.
  const replayable = (a: Approval): Approval =>
    a.legacy === undefined || patched(EXACT_APPROVALS_PATCH) ? a : { ...a, rule: a.legacy, remember: { rule: a.legacy, grantedBy: 'human' } };
  const applyApproval = (source: string, a: { event: TurnEvent; remember: SessionApproval | null }) => {
    const r = h.turns.apply(a.event);
    if (!r.ok) return h.rejected(source, r.error);
    if (a.remember === null) return;
    h.remember(rememberApproval(h.approvals(), { ...a.remember, grantedAt: new Date(h.now()).toISOString() }));
    // The files this call runs bind the approval when it runs (workflows/turn-runner.ts).
    if (a.event.type === 'tool') h.turns.approvedForSession(a.event.callId, describeApproval(a.remember));
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
        const r = h.turns.check(approvalEvent(raw).event);
        if (r && !r.ok) throw new Error(r.error.message);
      },
    },
  );

  const denialEvent = (raw: unknown): TurnEvent => {
    const input = parse(denySchema, raw, 'deny');
    if (!h.pending().some((p) => p.callId === input.callId)) throw new Error(unknownCall(input.callId));
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
        const r = h.turns.check(denialEvent(raw));
        if (r && !r.ok) throw new Error(r.error.message);
      },
    },
  );
}
