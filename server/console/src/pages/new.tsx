// Starting a goal or a session. The Idempotency-Key makes a double submit (or a retry after a
// lost answer) the same workflow.
import { useState } from 'preact/hooks';
import { api, enc, Refused, say } from '../api';


const MODES = ['ask', 'read-only', 'auto-edit', 'full-auto'];

export function NewPage() {
  const [key] = useState(() => crypto.randomUUID());
  const start = async (e: Event, kind: 'goal' | 'session') => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    const text = (n: string) => {
      const v = f.get(n);
      return typeof v === 'string' ? v.trim() : '';
    };
    // A folder that does not exist yet is made only when asked (the API's createWorkspace).
    const where = { ...(text('workspace') ? { workspace: text('workspace') } : {}), ...(f.get('createWorkspace') ? { createWorkspace: true } : {}) };
    const body = kind === 'goal' ? { goal: text('goal'), mode: text('mode'), ...where, ...(f.get('autoApprove') ? { autoApprove: true } : {}) } : { mode: text('mode'), ...where };
    try {
      const r = await api<{ id: string }>('POST', `/api/${kind}s`, body, { 'Idempotency-Key': kind === 'goal' ? key : `${key}-s` });
      location.hash = `#/${kind}/${enc(r.id)}`;
    } catch (err) {
      if (!(err instanceof Refused)) say(err instanceof Error ? err.message : String(err), true);
    }
  };
  const workspaceLabel = 'Workspace (a folder inside the server’s; default: the server’s)';
  return (<div>
    <h2>Start</h2>
    <form class="card" aria-labelledby="new-goal-title" onSubmit={(e: Event) => void start(e, 'goal')}>
      <h3 id="new-goal-title">New goal</h3>
      <label for="goal-text">What to achieve</label>
      <textarea id="goal-text" name="goal" rows={3} required></textarea>
      <label for="goal-workspace">{workspaceLabel}</label>
      <input id="goal-workspace" name="workspace" type="text" />
      <div class="actions"><label class="inline"><input type="checkbox" name="createWorkspace" />create the workspace if it does not exist</label></div>
      <label for="goal-mode">Tool policy</label>
      <select id="goal-mode" name="mode">{MODES.map((m) => (<option value={m}>{m}</option>))}</select>
      <div class="actions"><label class="inline"><input type="checkbox" name="autoApprove" />start without plan approval</label></div>
      <div class="actions"><button class="primary">Start goal</button></div>
    </form>
    <form class="card" aria-labelledby="new-session-title" onSubmit={(e: Event) => void start(e, 'session')}>
      <h3 id="new-session-title">New session</h3>
      <label for="session-workspace">{workspaceLabel}</label>
      <input id="session-workspace" name="workspace" type="text" />
      <div class="actions"><label class="inline"><input type="checkbox" name="createWorkspace" />create the workspace if it does not exist</label></div>
      <label for="session-mode">Tool policy</label>
      <select id="session-mode" name="mode">{MODES.map((m) => (<option value={m}>{m}</option>))}</select>
      <div class="actions"><button class="primary">Start session</button></div>
    </form>
  </div>);
}
