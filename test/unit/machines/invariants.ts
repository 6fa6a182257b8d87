// Checks over a recorded, ordered directive trace: the tool invariants of seed 002 and the
// runner-facing promises (timers, activities) that hold whatever the event order.
import type { LogEvent } from '../../../machines/index';

type Directive = { readonly type: string; readonly event?: unknown; readonly callId?: unknown };

export function toolInvariantViolations(
  trace: readonly Directive[],
  cleared: ReadonlySet<string>,
  finishedCallsMustHaveResults: boolean,
): string[] {
  const violations: string[] = [];
  const called = new Set<string>();
  const results = new Map<string, number>();
  const approvalAsked = new Set<string>();
  const approved = new Set<string>();
  const denied = new Set<string>();
  for (const d of trace) {
    if (d.type === 'emit_event') {
      const e = d.event as LogEvent;
      if (e.kind === 'tool.call') {
        if (called.has(e.callId)) violations.push(`INV-TOOL-TERMINAL: ${e.callId} announced twice`);
        called.add(e.callId);
      } else if (e.kind === 'tool.result') {
        if (!called.has(e.callId)) violations.push(`INV-TOOL-CALL-BEFORE-RESULT: result for ${e.callId} before its tool.call`);
        results.set(e.callId, (results.get(e.callId) ?? 0) + 1);
        if ((results.get(e.callId) ?? 0) > 1) violations.push(`INV-TOOL-TERMINAL: ${e.callId} got a second result`);
      } else if (e.kind === 'tool.approval_requested') {
        approvalAsked.add(e.callId);
      } else if (e.kind === 'tool.approved') {
        approved.add(e.callId);
      } else if (e.kind === 'tool.denied') {
        denied.add(e.callId);
      }
    }
    if ((d.type === 'run_tool' || d.type === 'ask_human') && typeof d.callId === 'string') {
      const id = d.callId;
      if (!called.has(id)) violations.push(`${id} runs before tool.call`);
      if (results.has(id)) violations.push(`${id} runs after its result`);
      if (denied.has(id)) violations.push(`INV-TOOL-APPROVAL-BEFORE-EXEC: denied ${id} runs`);
      if (approvalAsked.has(id) && !approved.has(id)) violations.push(`INV-TOOL-APPROVAL-BEFORE-EXEC: ${id} runs without approval`);
      if (d.type === 'run_tool' && !cleared.has(id)) violations.push(`INV-TOOL-APPROVAL-BEFORE-EXEC: ${id} runs without a policy allow or an approval`);
    }
  }
  if (finishedCallsMustHaveResults) {
    for (const id of called) if (results.get(id) !== 1) violations.push(`INV-TOOL-TERMINAL: ${id} ended with ${results.get(id) ?? 0} results`);
  }
  return violations;
}
