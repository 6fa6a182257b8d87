// The shapes of Keel's HTTP API that the hooks read, as a front end sees them (JSON). They are
// the server's own views (server/schemas.ts, workflows/protocol/) narrowed to what a page uses:
// test/unit/react-package-types.test.ts checks at compile time that every server type is
// assignable to its twin here, so a change on the server that breaks a front end fails
// `npm run typecheck` instead of a user's page. Declared here (not imported) so that the
// package's declarations do not pull the server's modules into a front end.

export type WorkflowKind = 'goal' | 'session';

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  /** Model calls whose price was unknown: their cost is missing from costUsd, not zero. */
  unpricedCalls: number;
}

/** A tool call waiting for a human. `agent`: a sub-agent's call, shown as its session's. */
export interface PendingApproval {
  callId: string;
  name: string;
  input: unknown;
  reason: string | null;
  turnId: string;
  agent?: { agentId: string; label: string; parentCallId: string };
}

/** A content block of a message (Anthropic's Messages API shapes). */
export interface ContentBlock {
  type: string;
  text?: string;
  thinking?: string;
  name?: string;
  id?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: unknown;
  is_error?: boolean;
}

export interface Message {
  role: 'user' | 'assistant';
  content: string | readonly ContentBlock[];
}

export interface SessionState {
  sessionId: string;
  status: string;
  /** Why the session is paused, suspended, closing, closed or failed. */
  reason: string | null;
  turn: { turnId: string; status: string; step: number | null } | null;
  queueLength: number;
  pendingApprovals: PendingApproval[];
  question: { callId: string; question: string } | null;
  usage: { usage: Usage; turns: number; turnUsage: Usage | null };
}

export interface TranscriptPage {
  total: number;
  messages: readonly Message[];
}

/** GET /api/sessions/{id}. */
export interface SessionView {
  state: SessionState;
  transcript: TranscriptPage;
}

export interface Task {
  id: string;
  title: string;
  instructions: string;
  dependencies: string[];
  status: 'pending' | 'running' | 'succeeded' | 'failed' | 'skipped' | 'cancelled';
  attempts: number;
  result: string | null;
  /** The task agent of the current or last attempt (follow it with useRun). */
  agentId: string | null;
}

export interface GoalState {
  goalId: string;
  status: string;
  /** Why it is blocked or stopped, or the summary when the goal is met. */
  reason: string | null;
  running: { taskId: string; agentId: string }[];
  pendingApprovals: (PendingApproval & { agentId: string; taskId: string })[];
  usage: { usage: Usage; agents: Record<string, Usage> };
}

/** GET /api/goals/{id}. */
export interface GoalView {
  state: GoalState;
  plan: { planVersion: number; status: string; tasks: Task[] };
}

/** What waits for a human (GET /api/inbox): a tool call, a plan, or a question. */
export type InboxItem =
  | { type: 'tool_call'; workflowId: string; workflowKind: WorkflowKind; callId: string; toolName: string; input: unknown; reason: string | null; diff: string | null; taskId: string | null; suggestedRule: string | null }
  | { type: 'plan'; workflowId: string; goal: string; planVersion: number; tasks: Task[] }
  | { type: 'question'; workflowId: string; callId: string; question: string };

/** One goal, session or agent in GET /api/workflows. */
export interface ListEntry {
  id: string;
  kind: string | null;
  status: string | null;
  pendingApprovals: number;
  startTime: string;
  closeTime: string | null;
}

export type Mode = 'read-only' | 'ask' | 'auto-edit' | 'full-auto';

/** POST /api/sessions. */
export interface StartSessionRequest {
  workspace?: string;
  createWorkspace?: boolean;
  mode?: Mode;
  model?: string;
  system?: string;
}

/** POST /api/goals. */
export interface StartGoalRequest {
  goal: string;
  workspace?: string;
  createWorkspace?: boolean;
  mode?: Mode;
  autoApprove?: boolean;
  budgetUsd?: number;
  model?: string;
}

/** POST /api/workflows/{id}/approve: `session` remembers the call (or `rule`) for the rest of the session. */
export interface ApproveRequest {
  callId: string;
  scope?: 'once' | 'session';
  rule?: string;
}

export interface DenyRequest {
  callId: string;
  reason?: string;
}
