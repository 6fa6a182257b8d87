// What waits for a human, as cards: a tool call (with its diff, or its exact arguments), a
// plan (each task's instructions, role and acceptance), a question. Each card has an
// identity (itemKey) and registers its one-key actions under it; the keyboard acts on the
// card that has focus, found by that identity, never by position, and says what it acted on.
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { act, enc, say } from './api';
import type { InboxItem, Task } from './types';
import { DiffView } from './ui';

type ToolItem = Extract<InboxItem, { type: 'tool_call' }>;
type PlanItem = Extract<InboxItem, { type: 'plan' }>;
type QuestionItem = Extract<InboxItem, { type: 'question' }>;

export const itemKey = (i: InboxItem): string =>
  i.type === 'tool_call' ? `tool:${i.workflowId}:${i.callId}` : i.type === 'plan' ? `plan:${i.workflowId}:${i.planVersion}` : `question:${i.workflowId}:${i.callId}`;

/** One-key actions of the cards on the page, by item identity. */
const actions = new Map<string, Record<string, () => void>>();

function useKeys(key: string, keys: Record<string, () => void>): void {
  // Registered on every render: the handlers close over the card's current text fields.
  actions.set(key, keys);
  useEffect(() => () => void actions.delete(key), [key]);
}

/** The actions of the focused card (null when no card has focus). */
export function focusedCard(): { key: string; label: string; keys: Record<string, () => void> } | null {
  const el = document.activeElement?.closest<HTMLElement>('.inbox-item');
  const key = el?.dataset.key;
  const keys = key ? actions.get(key) : undefined;
  return key && keys ? { key, label: el.getAttribute('aria-label') ?? key, keys } : null;
}

const safeId = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, '_');

/** The line on a card that says what was done to it (and stays while the card does). */
function useOutcome(): [string, (label: string, path: string, body?: unknown) => Promise<void>] {
  const [outcome, setOutcome] = useState('');
  const run = async (label: string, path: string, body?: unknown) => {
    setOutcome(`${label}…`);
    const ok = await act(label, path, body);
    setOutcome(ok ? `${label}: sent` : `${label}: failed (see the status line)`);
    if (ok) window.dispatchEvent(new Event('keel:acted'));
  };
  return [outcome, run];
}

export function ToolCallCard({ item }: { item: ToolItem }) {
  const key = itemKey(item);
  const id = safeId(key);
  // The server's suggestion (machines/approval.ts), so the console offers what the CLI offers;
  // emptied, "approve for session" remembers exactly this call.
  const [rule, setRule] = useState(() => item.suggestedRule ?? '');
  const [reason, setReason] = useState('');
  const [outcome, run] = useOutcome();
  const base = `/api/workflows/${enc(item.workflowId)}`;
  const what = `${item.toolName} (${item.callId}) in ${item.workflowId}`;
  const approve = () => void run(`approve ${what}`, `${base}/approve`, { callId: item.callId });
  const approveSession = () => void run(`approve ${what} for the session`, `${base}/approve`, { callId: item.callId, scope: 'session', ...(rule.trim() ? { rule: rule.trim() } : {}) });
  const deny = () => void run(`deny ${what}`, `${base}/deny`, { callId: item.callId, ...(reason.trim() ? { reason: reason.trim() } : {}) });
  useKeys(key, { a: approve, s: approveSession, d: deny, e: () => document.getElementById(`rule-${id}`)?.focus() });
  return (<article class="card inbox-item" tabindex={0} role="listitem" data-key={key} data-type="tool_call" data-call={item.callId} aria-label={`tool call ${item.toolName} (${item.callId}) waiting in ${item.workflowId}`}>
    <header>
      <strong>{item.toolName}</strong>
      <span class="muted">in <a href={`#/${item.workflowKind}/${enc(item.workflowId)}`}>{item.workflowId}</a>{item.taskId ? (<> · task {item.taskId}</>) : ''} · <code>{item.callId}</code></span>
    </header>
    {item.reason ? (<p class="muted">Why it asks: {item.reason}</p>) : null}
    {item.diff ? (<DiffView diff={item.diff} />) : null}
    <details open={!item.diff}><summary>arguments</summary><pre aria-label="arguments">{JSON.stringify(item.input, null, 2)}</pre></details>
    <div class="actions">
      <button class="primary" data-act="approve" onClick={approve}><kbd>a</kbd> Approve</button>
      <button data-act="session" onClick={approveSession}><kbd>s</kbd> Approve for session</button>
      <label class="inline" for={`rule-${id}`}><kbd>e</kbd> rule</label>
      <input id={`rule-${id}`} type="text" data-act="rule" placeholder="empty: exactly this call" value={rule} onInput={(e: Event) => setRule((e.target as HTMLInputElement).value)} />
    </div>
    <div class="actions">
      <button class="danger" data-act="deny" onClick={deny}><kbd>d</kbd> Deny</button>
      <label class="inline" for={`deny-${id}`}>reason</label>
      <input id={`deny-${id}`} type="text" placeholder="optional: why not" value={reason} onInput={(e: Event) => setReason((e.target as HTMLInputElement).value)} />
    </div>
    {outcome ? (<p class="outcome" role="status">{outcome}</p>) : null}
  </article>);
}

/** A task as the planner wrote it; the acceptance check travels at the end of its instructions (workflows/planning.ts). */
export function TaskDetails({ task }: { task: Pick<Task, 'id' | 'title' | 'instructions' | 'role' | 'dependencies'> }) {
  const at = task.instructions.lastIndexOf('\n\nAcceptance check: ');
  const instructions = at >= 0 ? task.instructions.slice(0, at) : task.instructions;
  const acceptance = at >= 0 ? task.instructions.slice(at + '\n\nAcceptance check: '.length) : null;
  return (<li>
    <strong>{task.id}</strong> — {task.title}{task.dependencies.length ? ( <span class="muted">(after {task.dependencies.join(', ')})</span>) : null}
    <dl class="task">
      <dt>role</dt><dd>{task.role || '—'}</dd>
      <dt>instructions</dt><dd class="pre">{instructions}</dd>
      <dt>acceptance</dt><dd class="pre">{acceptance ?? (<span class="muted">none given</span>)}</dd>
    </dl>
  </li>);
}

export function PlanCard({ item }: { item: PlanItem }) {
  const key = itemKey(item);
  const id = safeId(key);
  const [feedback, setFeedback] = useState('');
  const [outcome, run] = useOutcome();
  const base = `/api/goals/${enc(item.workflowId)}/plan`;
  const approve = () => void run(`approve plan v${item.planVersion} of ${item.workflowId}`, `${base}/approve`);
  const reject = () => {
    if (!feedback.trim()) {
      say('Write what to change in the plan first.', true);
      document.getElementById(`feedback-${id}`)?.focus();
      return;
    }
    void run(`reject plan v${item.planVersion} of ${item.workflowId}`, `${base}/reject`, { feedback: feedback.trim() });
  };
  useKeys(key, { a: approve, d: reject });
  return (<article class="card inbox-item" tabindex={0} role="listitem" data-key={key} data-type="plan" aria-label={`plan v${item.planVersion} of ${item.workflowId} waiting for approval`}>
    <header><strong>Plan v{item.planVersion}</strong><span class="muted">for <a href={`#/goal/${enc(item.workflowId)}`}>{item.workflowId}</a></span></header>
    <p>{item.goal}</p>
    <ol class="tasks">{item.tasks.map((t) => (<TaskDetails key={t.id} task={t} />))}</ol>
    <div class="actions"><button class="primary" data-act="approve" onClick={approve}><kbd>a</kbd> Approve plan</button></div>
    <div class="actions">
      <button class="danger" data-act="deny" onClick={reject}><kbd>d</kbd> Reject</button>
      <label class="inline" for={`feedback-${id}`}>feedback</label>
      <input id={`feedback-${id}`} type="text" placeholder="what to change" value={feedback} onInput={(e: Event) => setFeedback((e.target as HTMLInputElement).value)} />
    </div>
    {outcome ? (<p class="outcome" role="status">{outcome}</p>) : null}
  </article>);
}

export function QuestionCard({ item }: { item: QuestionItem }) {
  const key = itemKey(item);
  const id = `answer-${safeId(key)}`;
  const [text, setText] = useState('');
  const [outcome, run] = useOutcome();
  const send = (e?: Event) => {
    e?.preventDefault();
    void run(`answer ${item.workflowId}`, `/api/sessions/${enc(item.workflowId)}/answer`, { text });
  };
  useKeys(key, { t: () => document.getElementById(id)?.focus() });
  return (<article class="card inbox-item" tabindex={0} role="listitem" data-key={key} data-type="question" aria-label={`question from ${item.workflowId}`}>
    <header><strong>Question</strong><span class="muted">from <a href={`#/session/${enc(item.workflowId)}`}>{item.workflowId}</a></span></header>
    <p>{item.question}</p>
    <form class="actions" onSubmit={send}>
      <label class="inline" for={id}><kbd>t</kbd> answer</label>
      <input id={id} type="text" required value={text} onInput={(e: Event) => setText((e.target as HTMLInputElement).value)} />
      <button class="primary">Send</button>
    </form>
    {outcome ? (<p class="outcome" role="status">{outcome}</p>) : null}
  </article>);
}

export function ItemCard({ item }: { item: InboxItem }) {
  if (item.type === 'tool_call') return (<ToolCallCard item={item} />);
  if (item.type === 'plan') return (<PlanCard item={item} />);
  return (<QuestionCard item={item} />);
}

/** A list of waiting items, keyed by identity: cards keep their DOM, focus and typed text as items come and go. */
export function ItemList({ items, label }: { items: InboxItem[]; label: string }) {
  // Keyed rendering keeps each card's elements, but moving a card (an item arrives ahead of
  // it) takes focus from whatever it holds: the focused element and its caret go back.
  const active = document.activeElement;
  const field = active instanceof HTMLInputElement || active instanceof HTMLTextAreaElement ? active : null;
  const saved = useRef<{ el: Element | null; start: number | null; end: number | null }>({ el: null, start: null, end: null });
  saved.current = { el: active, start: field?.selectionStart ?? null, end: field?.selectionEnd ?? null };
  useLayoutEffect(() => {
    const { el, start, end } = saved.current;
    if (!(el instanceof HTMLElement) || el === document.body || !el.isConnected || document.activeElement === el) return;
    el.focus({ preventScroll: true });
    if ((el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement) && start !== null) el.setSelectionRange(start, end ?? start);
  });
  return (<div class="items" role="list" aria-label={label}>{items.map((i) => (<ItemCard key={itemKey(i)} item={i} />))}</div>);
}
