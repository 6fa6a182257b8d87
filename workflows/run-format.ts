// A run's format: a stamp in its memo saying it was started by code that has every patch in
// FORMAT_1_PATCHES, so it need not ask for them. Each `patched()` in a new run writes two
// history events (a marker and an upsert of TemporalChangeVersion): 4 of a three-turn session's
// 129 (`npx tsx bench/history-trace.ts`), and more for a goal and its agents. KeelClient, a
// goal starting its agents and every continue-as-new stamp the run; a run started without the
// stamp (the Temporal CLI, older clients) asks as before, and a run recorded before the stamp
// existed has none, so it replays unchanged. The stamp is in the start event: replay sees it too.
import { patched, workflowInfo } from '@temporalio/workflow';
import { KeelKind, KeelWorkspace } from './search-attributes';

const RUN_FORMAT_MEMO = 'keelRunFormat';
// 2: with encryption keys, a control that takes an optional reason (interrupt, pause, close, a
//    goal's cancel) and arrives with no payload is refused. A run stamped 1 accepted it, and a
//    signal's refusal changes what the run then does, so only runs stamped 2 refuse: a
//    recorded run replays as it ran (a bare update's validator is not run on replay, but its
//    handler is, so the handler needs the same answer).
// 3: a tool's large result is stored once in the conversation store and history keeps a
//    preview and its reference (FORMAT_3_PATCHES: such a run asks for none of them).
// 4: a sub-agent reports to its parent only what the parent shows while it runs, and starts
//    showing its status (FORMAT_4_PATCHES).
const RUN_FORMAT = 4;

/**
 * The patches every format-1 run has. Never add to this list: a patch added later is asked
 * for with `patched()` (a format-1 run may be recorded without it); a format 2 may take it in.
 */
const FORMAT_1_PATCHES: ReadonlySet<string> = new Set([
  'keel-resting-search-status',
  'setup-one-activity',
  'session-queue-handover',
  'agent-unattended-retries',
  'keel-exact-session-approvals',
  'agents-check-store-id',
  'agent-report-token',
  'goal-continue-as-new',
  'goal-follow-ups-need-plan-approval',
  'scripts-hashed-at-ask',
  'tool-limit-status',
  'shutdown-tool-is-worker-lost',
]);

/** The patches every format-3 run has (asked for with `patched()` by runs of an earlier format). */
const FORMAT_3_PATCHES: ReadonlySet<string> = new Set(['tool-results-stored']);

/**
 * A sub-agent reports only what its parent shows while it runs (machines/sub-agent-reports.ts;
 * before, every change of its usage), and its parent starts it showing its status.
 */
export const SUB_AGENT_QUIET_REPORTS_PATCH = 'sub-agent-quiet-reports';

/** The patches every format-4 run has. */
const FORMAT_4_PATCHES: ReadonlySet<string> = new Set([SUB_AGENT_QUIET_REPORTS_PATCH]);

/** The format this run was started with (0: no stamp). */
export function runFormat(): number {
  const value = workflowInfo().memo?.[RUN_FORMAT_MEMO];
  return typeof value === 'number' && Number.isSafeInteger(value) ? value : 0;
}

/** Whether this run refuses a payload-less reason control under encryption keys (format 2). */
export function refusesBareReasonControls(): boolean {
  return runFormat() >= 2;
}

/** `patched(patchId)`, answered from the stamp when the run's format has the patch (no history events). */
export function hasPatch(patchId: string): boolean {
  const format = runFormat();
  return (format >= 1 && FORMAT_1_PATCHES.has(patchId)) || (format >= 3 && FORMAT_3_PATCHES.has(patchId)) || (format >= 4 && FORMAT_4_PATCHES.has(patchId)) || patched(patchId);
}

/** The memo of a run this one starts (an agent) or continues as: the stamp, and what else was there. */
export function stampedMemo(memo: Record<string, unknown> | undefined = {}): Record<string, unknown> {
  return { ...memo, [RUN_FORMAT_MEMO]: RUN_FORMAT };
}

/** The search attributes a started run shows from its first moment (it then need not write them). */
export function startSearchAttributes(kind: string, workspace: string): Array<{ key: typeof KeelKind | typeof KeelWorkspace; value: string }> {
  return [
    { key: KeelKind, value: kind },
    { key: KeelWorkspace, value: workspace },
  ];
}
