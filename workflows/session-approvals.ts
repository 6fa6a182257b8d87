// approve / deny in a session act on the turn's tool call; the session machine has no say in
// them. A session-scope approval is remembered as exactly the call the human saw (or the
// rule the human gave), for the rest of the session.
import { setHandler } from '@temporalio/workflow';
import type { z } from 'zod';
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
  /** A sub-agent's waiting call is answered by that child (workflows/sub-agents.ts): its id, or null for the session's own. */
  delegated?: DelegatedApprovals;
}

export interface DelegatedApprovals {
  owner(callId: string): string | null;
  approve(agentId: string, answer: z.input<typeof approveSchema>): Promise<void>;
  deny(agentId: string, answer: z.input<typeof denySchema>): Promise<void>;
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
  /**
   * A child's call: checked against what the session shows (the same refusals), then sent on to
   * the child, which applies it as its own; "always" is remembered by the session too, so its
   * own later calls and its later children are not asked again.
   */
  const forwardApproval = (raw: unknown): boolean => {
    const owner = h.delegated?.owner(parse(approveSchema, raw, 'approve').callId) ?? null;
    if (owner === null || h.delegated === undefined) return false;
    const a = approvalEvent(raw);
    const input = parse(approveSchema, raw, 'approve');
    void h.delegated.approve(owner, input).catch(() => undefined);
    if (a.remember !== null) h.remember(rememberApproval(h.approvals(), { ...a.remember, grantedAt: new Date(h.now()).toISOString() }));
    return true;
  };
  setHandler(approveSignal, (raw) =>
    h.post(() => {
      try {
        if (forwardApproval(raw)) return;
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
      h.post(() => {
        if (!forwardApproval(raw)) applyApproval('update approve', a);
      });
      return { status: h.status().status, callId: a.callId, sessionRule: a.rule };
    },
    {
      validator: (raw) => {
        const checked = validated(() => approvalEvent(raw));
        if (h.delegated?.owner(checked.callId) != null) return;
        const r = h.turns.check(checked.event);
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
    const owner = event.type === 'tool' ? (h.delegated?.owner(event.callId) ?? null) : null;
    if (owner !== null && h.delegated !== undefined && event.type === 'tool' && event.event.type === 'denied') {
      void h.delegated.deny(owner, { callId: event.callId, ...(event.event.reason !== undefined ? { reason: event.event.reason } : {}) }).catch(() => undefined);
      return;
    }
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
        const event = validated(() => denialEvent(raw));
        if (event.type === 'tool' && h.delegated?.owner(event.callId) != null) return;
        const r = h.turns.check(event);
        if (r && !r.ok) throw machineRefusal(r.error);
      },
    },
  );
}
