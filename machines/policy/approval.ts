// What a human's "approve" means for a waiting tool call: decided here once, for sessions,
// goals (their validators, before the answer is forwarded) and task agents, so a goal's
// caller hears the same refusal a session's caller does.
import { sessionApprovalFor, type ApprovalScope, type SessionApproval } from './session-approval';
import { legacySessionRuleFor, suggestedRuleFor } from './suggestions';

/** The answer as the human gave it (validated by approveSchema at the edge). */
export interface ApprovalAnswer {
  callId: string;
  scope?: ApprovalScope | undefined;
  /** With scope `session`: a rule to remember instead of the exact call. */
  rule?: string | undefined;
}

/** A tool call waiting for approval, as the turn machine lists it. */
export interface WaitingCall {
  callId: string;
  name: string;
  input: unknown;
}

/**
 * Why an approval is refused. Each is the code of the ApplicationFailure an update validator
 * throws, and so of the client's UpdateRejectedError and the API's problem response.
 */
export type ApprovalRefusalCode = 'unknown_call' | 'rule_needs_session_scope' | 'invalid_rule' | 'rule_does_not_cover';

export type ApprovalDecision =
  | {
      ok: true;
      callId: string;
      scope: ApprovalScope;
      /** What the session remembers (scope `session`); null for a one-time approval. */
      remember: SessionApproval | null;
      /** How the remembered approval reads (null for a one-time approval). */
      label: string | null;
      /**
       * What histories recorded before approvals became exact remembered instead
       * (EXACT_APPROVALS_PATCH): only when no rule was given; null otherwise.
       */
      legacyRule: string | null;
    }
  | { ok: false; code: ApprovalRefusalCode; message: string };

/** Decides an approval answer against the calls waiting now; pure, so validators can run it. */
export function approvalFrom(answer: ApprovalAnswer, waiting: readonly WaitingCall[], approver: string): ApprovalDecision {
  const call = waiting.find((p) => p.callId === answer.callId);
  if (!call) return { ok: false, code: 'unknown_call', message: unknownCallMessage(answer.callId, waiting) };
  const scope = answer.scope ?? 'once';
  if (scope !== 'session') {
    if (answer.rule !== undefined) return { ok: false, code: 'rule_needs_session_scope', message: 'approve: a rule is remembered only with scope "session"' };
    return { ok: true, callId: call.callId, scope, remember: null, label: null, legacyRule: null };
  }
  const request = { tool: call.name, input: call.input };
  // The exact call unless the human gave a rule, which must be valid and cover this call.
  const grant = sessionApprovalFor(request, answer.rule, { grantedBy: approver });
  if (!grant.ok) return { ok: false, code: grant.code, message: `approve: ${grant.error}` };
  const legacyRule = answer.rule === undefined ? legacySessionRuleFor(request) : null;
  return { ok: true, callId: call.callId, scope, remember: grant.approval, label: grant.label, legacyRule };
}

/** The refusal for a call id that is not waiting, naming the ones that are. */
export function unknownCallMessage(callId: string, waiting: readonly { callId: string }[]): string {
  const ids = waiting.map((p) => p.callId);
  return `unknown call id ${callId}: ${ids.length === 0 ? 'no tool call is waiting for approval' : `waiting for approval: ${ids.join(', ')}`}`;
}

/**
 * The rule offered with a waiting call for "approve for session" (suggestedRuleFor): the
 * server sends it, so every client offers the same text. Undefined when no rule can say it.
 */
export function suggestedSessionRule(call: Pick<WaitingCall, 'name' | 'input'>): string | undefined {
  return suggestedRuleFor({ tool: call.name, input: call.input });
}
