// The Keel console: plain modules, no build step. Every request carries the bearer token
// (kept in sessionStorage, taken from the URL fragment #token=… which never reaches a
// server); there are no cookies. Data only ever reaches the page through textContent.

const main = document.getElementById('main');
const statusBox = document.getElementById('status');
const TOKEN_KEY = 'keel-token';

// ---- token ---------------------------------------------------------------------------

function takeTokenFromFragment() {
  const m = location.hash.match(/(?:^#|&)token=([^&]+)/);
  if (!m) return;
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
  history.replaceState(null, '', `${location.pathname}#/inbox`);
}
const token = () => sessionStorage.getItem(TOKEN_KEY);

class Refused extends Error {}

async function api(method, path, body, headers = {}) {
  const t = token();
  if (!t) throw new Refused('no token');
  const res = await fetch(path, {
    method,
    headers: { Authorization: `Bearer ${t}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'omit',
  });
  if (res.status === 401) throw new Refused('refused');
  const data = res.headers.get('content-type')?.includes('json') ? await res.json() : null;
  if (!res.ok) throw new Error(data?.reason ?? data?.detail ?? `${res.status} ${res.statusText}`);
  return data;
}

// ---- DOM helpers -----------------------------------------------------------------------

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}
const svg = (tag, attrs = {}, ...children) => {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children.flat()) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
};
const present = (...xs) => xs.filter((x) => x !== null && x !== undefined && x !== false);
const badge = (s) => h('span', { class: `badge ${s ?? ''}` }, (s ?? 'unknown').replaceAll('_', ' '));

function say(text, error = false) {
  statusBox.textContent = text;
  statusBox.classList.toggle('error', error);
}

function showRefused() {
  main.replaceChildren(
    h('h2', {}, 'Token needed'),
    h('p', { role: 'alert', id: 'refused' }, token() ? 'Refused: this token is not accepted by the server.' : 'Refused: this page needs the API token.'),
    h('p', {}, 'Open the link `keel serve` printed (it carries the token after #), or paste the token here. It is kept in this tab only.'),
    h(
      'form',
      {
        onsubmit: (e) => {
          e.preventDefault();
          sessionStorage.setItem(TOKEN_KEY, new FormData(e.target).get('token').trim());
          location.hash = '#/inbox';
          route();
        },
      },
      h('label', { for: 'token-input' }, 'API token'),
      h('input', { id: 'token-input', name: 'token', type: 'password', autocomplete: 'off', required: true }),
      h('div', { class: 'actions' }, h('button', { class: 'primary' }, 'Use token')),
    ),
  );
}

// ---- SSE over fetch (EventSource cannot send the Authorization header) ------------------

function follow(id, onEvent) {
  const abort = new AbortController();
  let lastId = null;
  (async () => {
    for (let attempt = 0; !abort.signal.aborted; attempt++) {
      try {
        const res = await fetch(`/api/workflows/${encodeURIComponent(id)}/events`, {
          headers: { Authorization: `Bearer ${token()}`, Accept: 'text/event-stream', ...(lastId !== null ? { 'Last-Event-ID': lastId } : {}) },
          signal: abort.signal,
          credentials: 'omit',
        });
        if (!res.ok) throw new Error(`stream: ${res.status}`);
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let i;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            const ev = { event: 'message', data: '', id: null };
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) continue;
              const [k, ...rest] = line.split(':');
              const v = rest.join(':').replace(/^ /, '');
              if (k === 'event') ev.event = v;
              else if (k === 'data') ev.data += v;
              else if (k === 'id') ev.id = v;
            }
            if (ev.id !== null) lastId = ev.id;
            if (ev.event === 'end') return onEvent('end', null);
            onEvent(ev.event, ev.data ? JSON.parse(ev.data) : null);
          }
        }
      } catch {
        if (abort.signal.aborted) return;
      }
      // Reconnect where it stopped (Last-Event-ID: the stream offset).
      await new Promise((r) => setTimeout(r, Math.min(5000, 300 * 2 ** attempt)));
    }
  })();
  return () => abort.abort();
}

// ---- shared pieces ---------------------------------------------------------------------

function diffView(diff) {
  return h(
    'pre',
    { class: 'diff', 'aria-label': 'diff of the change' },
    diff.split('\n').map((l) => h('span', { class: l.startsWith('+') && !l.startsWith('+++') ? 'add' : l.startsWith('-') && !l.startsWith('---') ? 'del' : l.startsWith('@@') ? 'hunk' : '' }, `${l}\n`)),
  );
}

/** The rule "approve for session" remembers: what the human sees is what gets granted. */
function defaultRule(item) {
  const input = item.input ?? {};
  if (item.toolName === 'run_command' && typeof input.command === 'string') return `run_command(${input.command})`;
  if (typeof input.path === 'string') return `${item.toolName}(${input.path})`;
  return item.toolName;
}

async function act(what, body, done) {
  try {
    say(`${what.label}…`);
    await api('POST', what.path, body);
    say(`${what.label}: done`);
    done?.();
  } catch (e) {
    if (e instanceof Refused) return showRefused();
    say(`${what.label}: ${e.message}`, true);
  }
}

function toolCallCard(item, refresh) {
  const base = `/api/workflows/${encodeURIComponent(item.workflowId)}`;
  const ruleId = `rule-${item.callId}`;
  const reasonId = `deny-${item.callId}`;
  const approve = () => act({ label: `approve ${item.toolName}`, path: `${base}/approve` }, { callId: item.callId }, refresh);
  const approveSession = () => act({ label: `approve ${item.toolName} for the session`, path: `${base}/approve` }, { callId: item.callId, scope: 'session', rule: document.getElementById(ruleId).value.trim() || undefined }, refresh);
  const deny = () => act({ label: `deny ${item.toolName}`, path: `${base}/deny` }, { callId: item.callId, ...(document.getElementById(reasonId).value.trim() ? { reason: document.getElementById(reasonId).value.trim() } : {}) }, refresh);
  const card = h(
    'article',
    { class: 'card inbox-item', tabindex: 0, 'data-type': 'tool_call', 'data-call': item.callId, 'aria-label': `tool call ${item.toolName} waiting in ${item.workflowId}` },
    h(
      'header',
      {},
      h('strong', {}, item.toolName),
      h('span', { class: 'muted' }, 'in ', h('a', { href: `#/${item.workflowKind}/${encodeURIComponent(item.workflowId)}` }, item.workflowId), item.taskId ? ` · task ${item.taskId}` : ''),
    ),
    item.reason ? h('p', { class: 'muted' }, `Why it asks: ${item.reason}`) : null,
    item.diff ? diffView(item.diff) : h('pre', { 'aria-label': 'arguments' }, JSON.stringify(item.input, null, 2)),
    h(
      'div',
      { class: 'actions' },
      h('button', { class: 'primary', 'data-act': 'approve', onclick: approve }, h('kbd', {}, 'a'), ' Approve'),
      h('button', { 'data-act': 'session', onclick: approveSession }, h('kbd', {}, 's'), ' Approve for session'),
      h('label', { class: 'inline', for: ruleId }, h('kbd', {}, 'e'), ' rule'),
      h('input', { id: ruleId, type: 'text', value: defaultRule(item), 'data-act': 'rule' }),
    ),
    h(
      'div',
      { class: 'actions' },
      h('button', { class: 'danger', 'data-act': 'deny', onclick: deny }, h('kbd', {}, 'd'), ' Deny'),
      h('label', { class: 'inline', for: reasonId }, 'reason'),
      h('input', { id: reasonId, type: 'text', placeholder: 'optional: why not' }),
    ),
  );
  card.keel = { a: approve, s: approveSession, d: deny, e: () => document.getElementById(ruleId).focus() };
  return card;
}

function planCard(item, refresh) {
  const base = `/api/goals/${encodeURIComponent(item.workflowId)}/plan`;
  const fbId = `feedback-${item.workflowId}`;
  const approve = () => act({ label: 'approve plan', path: `${base}/approve` }, undefined, refresh);
  const reject = () => {
    const feedback = document.getElementById(fbId).value.trim();
    if (!feedback) {
      say('Write what to change in the plan first.', true);
      return document.getElementById(fbId).focus();
    }
    act({ label: 'reject plan', path: `${base}/reject` }, { feedback }, refresh);
  };
  const card = h(
    'article',
    { class: 'card inbox-item', tabindex: 0, 'data-type': 'plan', 'aria-label': `plan v${item.planVersion} of ${item.workflowId} waiting for approval` },
    h('header', {}, h('strong', {}, `Plan v${item.planVersion}`), h('span', { class: 'muted' }, 'for ', h('a', { href: `#/goal/${encodeURIComponent(item.workflowId)}` }, item.workflowId))),
    h('p', {}, item.goal),
    h('ol', {}, item.tasks.map((t) => h('li', {}, h('strong', {}, t.id), ` — ${t.title}`, t.dependencies.length ? h('span', { class: 'muted' }, ` (after ${t.dependencies.join(', ')})`) : ''))),
    h('div', { class: 'actions' }, h('button', { class: 'primary', 'data-act': 'approve', onclick: approve }, h('kbd', {}, 'a'), ' Approve plan')),
    h(
      'div',
      { class: 'actions' },
      h('button', { class: 'danger', 'data-act': 'deny', onclick: reject }, h('kbd', {}, 'd'), ' Reject'),
      h('label', { class: 'inline', for: fbId }, 'feedback'),
      h('input', { id: fbId, type: 'text', placeholder: 'what to change' }),
    ),
  );
  card.keel = { a: approve, d: reject };
  return card;
}

function questionCard(item, refresh) {
  const id = `answer-${item.callId}`;
  const send = (e) => {
    e?.preventDefault();
    act({ label: 'answer', path: `/api/sessions/${encodeURIComponent(item.workflowId)}/answer` }, { text: document.getElementById(id).value }, refresh);
  };
  const card = h(
    'article',
    { class: 'card inbox-item', tabindex: 0, 'data-type': 'question', 'aria-label': `question from ${item.workflowId}` },
    h('header', {}, h('strong', {}, 'Question'), h('span', { class: 'muted' }, 'from ', h('a', { href: `#/session/${encodeURIComponent(item.workflowId)}` }, item.workflowId))),
    h('p', {}, item.question),
    h('form', { class: 'actions', onsubmit: send }, h('label', { class: 'inline', for: id }, h('kbd', {}, 't'), ' answer'), h('input', { id, type: 'text', required: true }), h('button', { class: 'primary' }, 'Send')),
  );
  card.keel = { t: () => document.getElementById(id).focus() };
  return card;
}

function itemCard(item, refresh) {
  if (item.type === 'tool_call') return toolCallCard(item, refresh);
  if (item.type === 'plan') return planCard(item, refresh);
  return questionCard(item, refresh);
}

// ---- pages -----------------------------------------------------------------------------

let cleanup = () => {};

async function inboxPage() {
  const list = h('div', { id: 'inbox', role: 'list', 'aria-label': 'waiting for a human' });
  main.replaceChildren(h('h2', {}, 'Inbox'), h('p', { class: 'muted' }, 'Everything waiting for a human. ', h('kbd', {}, 'j'), '/', h('kbd', {}, 'k'), ' to move, then one key to answer (', h('kbd', {}, '?'), ' lists them).'), list);
  let stopped = false;
  let lastKey = '';
  const refresh = async () => {
    try {
      const { items } = await api('GET', '/api/inbox');
      document.getElementById('inbox-count').textContent = items.length ? String(items.length) : '';
      const key = JSON.stringify(items.map((i) => [i.type, i.workflowId, i.callId ?? i.planVersion]));
      if (key === lastKey) return;
      lastKey = key;
      const focusedIndex = [...list.children].indexOf(document.activeElement?.closest('.inbox-item'));
      list.replaceChildren(...(items.length ? items.map((i) => Object.assign(itemCard(i, refresh), { role: 'listitem' })) : [h('p', { class: 'empty' }, 'Nothing is waiting for you.')]));
      for (const c of list.children) c.setAttribute('role', 'listitem');
      if (focusedIndex >= 0) list.children[Math.min(focusedIndex, list.children.length - 1)]?.focus();
    } catch (e) {
      if (e instanceof Refused) {
        stopped = true;
        return showRefused();
      }
      say(e.message, true);
    }
  };
  await refresh();
  // The inbox spans every workflow, so it polls; goal and session pages follow their streams.
  const timer = setInterval(() => !stopped && refresh(), 1500);
  cleanup = () => clearInterval(timer);
}

async function listPage(params) {
  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'filters', onsubmit: (e) => e.preventDefault(), onchange: () => load() },
    h('div', {}, h('label', { for: 'f-kind' }, 'Kind'), h('select', { id: 'f-kind', name: 'kind' }, h('option', { value: '' }, 'goals and sessions'), h('option', { value: 'goal' }, 'goals'), h('option', { value: 'session' }, 'sessions'), h('option', { value: 'agent' }, 'task agents'))),
    h('div', {}, h('label', { for: 'f-status' }, 'Status'), h('input', { id: 'f-status', name: 'status', type: 'text', placeholder: 'e.g. executing', value: params.get('status') ?? '' })),
    h('div', {}, h('label', { class: 'inline' }, h('input', { type: 'checkbox', name: 'waiting' }), 'waiting for a human')),
    h('div', {}, h('label', { class: 'inline' }, h('input', { type: 'checkbox', name: 'all' }), 'include ended')),
  );
  const body = h('tbody');
  main.replaceChildren(
    h('h2', {}, 'Goals and sessions'),
    form,
    h('table', { 'aria-label': 'goals and sessions' }, h('thead', {}, h('tr', {}, ['Id', 'Kind', 'Status', 'Waiting', 'Workspace', 'Started'].map((c) => h('th', { scope: 'col' }, c)))), body),
  );
  async function load() {
    const f = new FormData(form);
    const q = new URLSearchParams();
    if (f.get('kind')) q.set('kind', f.get('kind'));
    if (String(f.get('status') ?? '').trim()) q.set('status', String(f.get('status')).trim());
    if (f.get('waiting')) q.set('waiting', 'true');
    if (f.get('all')) q.set('all', 'true');
    try {
      const { items } = await api('GET', `/api/workflows?${q}`);
      body.replaceChildren(
        ...items.map((i) =>
          h(
            'tr',
            {},
            h('td', {}, i.kind === 'goal' || i.kind === 'session' ? h('a', { href: `#/${i.kind}/${encodeURIComponent(i.id)}` }, i.id) : i.id),
            h('td', {}, i.kind ?? ''),
            h('td', {}, badge(i.status)),
            h('td', {}, i.pendingApprovals ? String(i.pendingApprovals) : i.status === 'awaiting_plan_approval' ? 'plan' : ''),
            h('td', { class: 'muted' }, i.workspace ?? ''),
            h('td', { class: 'muted' }, new Date(i.startTime).toLocaleString()),
          ),
        ),
      );
      if (!items.length) body.replaceChildren(h('tr', {}, h('td', { colspan: 6 }, 'None.')));
    } catch (e) {
      if (e instanceof Refused) return showRefused();
      say(e.message, true);
    }
  }
  await load();
  const timer = setInterval(load, 3000);
  cleanup = () => clearInterval(timer);
}

function newPage() {
  const key = crypto.randomUUID();
  const goalForm = h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'new-goal-title',
      onsubmit: async (e) => {
        e.preventDefault();
        const f = new FormData(e.target);
        const body = { goal: String(f.get('goal')), mode: String(f.get('mode')), ...(f.get('workspace') ? { workspace: String(f.get('workspace')) } : {}), ...(f.get('autoApprove') ? { autoApprove: true } : {}) };
        try {
          // The Idempotency-Key makes a double submit (or a retry after a lost answer) the same goal.
          const r = await api('POST', '/api/goals', body, { 'Idempotency-Key': key });
          location.hash = `#/goal/${encodeURIComponent(r.id)}`;
        } catch (err) {
          if (err instanceof Refused) return showRefused();
          say(err.message, true);
        }
      },
    },
    h('h3', { id: 'new-goal-title' }, 'New goal'),
    h('label', { for: 'goal-text' }, 'What to achieve'),
    h('textarea', { id: 'goal-text', name: 'goal', rows: 3, required: true }),
    h('label', { for: 'goal-workspace' }, 'Workspace (a folder inside the server’s; default: the server’s)'),
    h('input', { id: 'goal-workspace', name: 'workspace', type: 'text' }),
    h('label', { for: 'goal-mode' }, 'Tool policy'),
    h('select', { id: 'goal-mode', name: 'mode' }, ['ask', 'read-only', 'auto-edit', 'full-auto'].map((m) => h('option', { value: m }, m))),
    h('div', { class: 'actions' }, h('label', { class: 'inline' }, h('input', { type: 'checkbox', name: 'autoApprove' }), 'start without plan approval')),
    h('div', { class: 'actions' }, h('button', { class: 'primary' }, 'Start goal')),
  );
  const sessionForm = h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'new-session-title',
      onsubmit: async (e) => {
        e.preventDefault();
        const f = new FormData(e.target);
        try {
          const r = await api('POST', '/api/sessions', { mode: String(f.get('mode')), ...(f.get('workspace') ? { workspace: String(f.get('workspace')) } : {}) }, { 'Idempotency-Key': `${key}-s` });
          location.hash = `#/session/${encodeURIComponent(r.id)}`;
        } catch (err) {
          if (err instanceof Refused) return showRefused();
          say(err.message, true);
        }
      },
    },
    h('h3', { id: 'new-session-title' }, 'New session'),
    h('label', { for: 'session-workspace' }, 'Workspace (a folder inside the server’s; default: the server’s)'),
    h('input', { id: 'session-workspace', name: 'workspace', type: 'text' }),
    h('label', { for: 'session-mode' }, 'Tool policy'),
    h('select', { id: 'session-mode', name: 'mode' }, ['ask', 'read-only', 'auto-edit', 'full-auto'].map((m) => h('option', { value: m }, m))),
    h('div', { class: 'actions' }, h('button', { class: 'primary' }, 'Start session')),
  );
  main.replaceChildren(h('h2', {}, 'Start'), goalForm, sessionForm);
  cleanup = () => {};
}

/** The plan as a dependency graph: one column per depth, an arrow per dependency. */
function planGraph(tasks) {
  const depth = new Map();
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const depthOf = (t, seen = new Set()) => {
    if (depth.has(t.id)) return depth.get(t.id);
    if (seen.has(t.id)) return 0;
    seen.add(t.id);
    const d = t.dependencies.length ? 1 + Math.max(...t.dependencies.map((x) => (byId.has(x) ? depthOf(byId.get(x), seen) : 0))) : 0;
    depth.set(t.id, d);
    return d;
  };
  tasks.forEach((t) => depthOf(t));
  const cols = [];
  for (const t of tasks) (cols[depth.get(t.id)] ??= []).push(t);
  const W = 190, H = 52, GX = 60, GY = 18;
  const pos = new Map();
  cols.forEach((col, x) => col.forEach((t, y) => pos.set(t.id, { x: 10 + x * (W + GX), y: 10 + y * (H + GY) })));
  const width = 20 + cols.length * (W + GX) - GX;
  const height = 20 + Math.max(1, ...cols.map((c) => c.length)) * (H + GY) - GY;
  const edges = tasks.flatMap((t) =>
    t.dependencies.filter((d) => pos.has(d)).map((d) => {
      const a = pos.get(d), b = pos.get(t.id);
      return svg('path', { d: `M${a.x + W},${a.y + H / 2} C${a.x + W + GX / 2},${a.y + H / 2} ${b.x - GX / 2},${b.y + H / 2} ${b.x},${b.y + H / 2}`, 'marker-end': 'url(#arrow)' });
    }),
  );
  const nodes = tasks.map((t) => {
    const p = pos.get(t.id);
    return svg('g', { class: `node ${t.status}`, transform: `translate(${p.x},${p.y})` }, svg('title', {}, `${t.id}: ${t.title} (${t.status})`), svg('rect', { width: W, height: H, rx: 6 }), svg('text', { x: 8, y: 20, 'font-weight': 600 }, `${t.id} · ${t.status}`), svg('text', { x: 8, y: 38 }, t.title.length > 28 ? `${t.title.slice(0, 27)}…` : t.title));
  });
  return h(
    'figure',
    { class: 'graph' },
    svg('svg', { viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-label': `plan graph: ${tasks.map((t) => `${t.id} (${t.status})${t.dependencies.length ? ` after ${t.dependencies.join(', ')}` : ''}`).join('; ')}` }, svg('defs', {}, svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto' }, svg('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#8c959f' }))), edges, nodes),
  );
}

function budgetBars(usage, limits) {
  const rows = [
    ['input tokens', usage.inputTokens, limits.inputTokens],
    ['output tokens', usage.outputTokens, limits.outputTokens],
    ['cost (USD)', usage.costUsd, limits.costUsd],
  ];
  return h(
    'div',
    { class: 'bars' },
    rows.flatMap(([name, used, limit]) => {
      const id = `bar-${name.replace(/\W+/g, '-')}`;
      const label = typeof used === 'number' && name.startsWith('cost') ? used.toFixed(4) : String(used);
      return [
        h('label', { for: id, class: 'inline' }, name),
        limit ? h('meter', { id, min: 0, max: limit, value: Math.min(used, limit), high: limit * 0.8 }) : h('output', { id, class: 'muted' }, 'no limit set'),
        h('span', { class: 'muted' }, limit ? `${label} / ${limit}` : label),
      ];
    }),
  );
}

async function goalPage(id) {
  const root = h('div', { id: 'goal' });
  const streamText = h('pre', { class: 'stream', 'aria-label': 'model text, streamed', 'aria-live': 'off', id: 'model-text' });
  const streamNote = h('p', { class: 'muted', hidden: true }, 'The model’s streamed text is served while the goal runs; the tasks’ results and the events remain.');
  const eventsList = h('ol', { class: 'muted', id: 'events', reversed: true });
  main.replaceChildren(root);
  let timer = null;
  const render = async () => {
    let data;
    try {
      data = await api('GET', `/api/goals/${encodeURIComponent(id)}`);
    } catch (e) {
      if (e instanceof Refused) return showRefused();
      return say(e.message, true);
    }
    const { state, plan } = data;
    const g = state.goal;
    const waiting = state.pendingApprovals.map((p) => ({ type: 'tool_call', workflowId: id, workflowKind: 'goal', callId: p.callId, toolName: p.name, input: p.input, reason: p.reason, diff: null, taskId: p.taskId }));
    const ended = state.status === 'goal_met' || state.status === 'stopped';
    root.replaceChildren(...present(
      h('h2', {}, 'Goal ', h('span', { class: 'muted' }, id), ' ', badge(state.status)),
      h('p', {}, g.goal),
      ended
        ? h('section', { class: `card report ${state.status === 'goal_met' ? '' : 'bad'}`, 'aria-labelledby': 'report-title' }, h('h3', { id: 'report-title' }, state.status === 'goal_met' ? 'Goal met' : 'Goal stopped'), h('p', {}, state.reason ?? ''))
        : null,
      state.status === 'awaiting_plan_approval' ? planCard({ workflowId: id, goal: g.goal, planVersion: g.planVersion, tasks: g.tasks }, render) : null,
      waiting.length ? h('section', { 'aria-labelledby': 'goal-waiting' }, h('h3', { id: 'goal-waiting' }, 'Waiting for you'), waiting.map((w) => toolCallCard(w, render))) : null,
      h('h3', {}, `Plan v${plan.planVersion}`),
      plan.tasks.length ? planGraph(plan.tasks) : h('p', { class: 'muted' }, 'No plan yet.'),
      plan.tasks.length
        ? h(
            'table',
            { 'aria-label': 'tasks' },
            h('thead', {}, h('tr', {}, ['Task', 'State', 'Attempts', 'Evidence', 'Result'].map((c) => h('th', { scope: 'col' }, c)))),
            h(
              'tbody',
              {},
              plan.tasks.map((t) => {
                const ev = plan.evidence[t.id];
                return h(
                  'tr',
                  {},
                  h('td', {}, h('strong', {}, t.id), h('div', { class: 'muted' }, t.title)),
                  h('td', {}, badge(t.status)),
                  h('td', {}, `${t.attempts}/${t.attemptLimit}`),
                  h('td', {}, ev ? h('ul', {}, ev.filesChanged.map((f) => h('li', {}, `changed ${f}`)), ev.commands.map((c) => h('li', {}, `$ ${c.command} → ${c.refused ?? c.exitCode ?? c.status}`))) : t.evidence.length ? h('ul', {}, t.evidence.map((x) => h('li', {}, x))) : ''),
                  h('td', { class: 'muted' }, t.result ?? ''),
                );
              }),
            ),
          )
        : null,
      h('h3', {}, 'Budget'),
      budgetBars(state.usage.usage, state.usage.limits),
      g.reviews?.length ? h('section', {}, h('h3', {}, 'Reviews'), g.reviews.map((r) => h('div', { class: 'card' }, h('strong', {}, `cycle ${r.cycle}: ${r.verdict}`), h('p', {}, r.findings)))) : null,
      h('h3', {}, 'Model text'),
      Object.assign(streamNote, { hidden: !(ended && !streamText.textContent) }),
      streamText,
      h('h3', {}, 'Events'),
      eventsList,
      ended ? null : h('div', { class: 'actions' }, h('button', { class: 'danger', onclick: () => act({ label: 'cancel goal', path: `/api/goals/${encodeURIComponent(id)}/cancel` }, { reason: 'cancelled in the console' }, render) }, 'Cancel goal')),
    ));
  };
  await render();
  const stop = follow(id, (topic, data) => {
    if (topic === 'model' && data.kind === 'delta' && data.block === 'text') {
      streamText.textContent = (streamText.textContent + data.text).slice(-6000);
      streamText.scrollTop = streamText.scrollHeight;
    } else if (topic === 'model' && data.kind === 'start') {
      streamText.textContent += streamText.textContent ? '\n\n' : '';
    } else if (topic === 'events') {
      eventsList.prepend(h('li', {}, `${data.kind}${data.taskId ? ` [${data.taskId}]` : ''}`));
      while (eventsList.children.length > 60) eventsList.lastChild.remove();
      // Many events arrive together: render once they settle.
      clearTimeout(timer);
      timer = setTimeout(render, 150);
    } else if (topic === 'end') {
      render();
    }
  });
  cleanup = () => {
    stop();
    clearTimeout(timer);
  };
}

function blocksOf(message) {
  return typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : (message.content ?? []);
}

async function sessionPage(id) {
  const chat = h('div', { class: 'chat', id: 'chat', role: 'log', 'aria-label': 'conversation', 'aria-live': 'polite' });
  const live = h('div', { class: 'msg assistant streaming', hidden: true, 'aria-label': 'reply being written' });
  const side = h('div', { id: 'session-side' });
  const head = h('div');
  const input = h('textarea', { id: 'chat-input', name: 'text', rows: 2, required: true });
  const send = async (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    input.value = '';
    chat.append(h('div', { class: 'msg user' }, text));
    await act({ label: 'send', path: `/api/sessions/${encodeURIComponent(id)}/messages` }, { text });
  };
  const control = (op, body) => () => act({ label: op, path: `/api/sessions/${encodeURIComponent(id)}/${op}` }, body, render);
  const steerId = 'steer-text';
  main.replaceChildren(
    head,
    side,
    chat,
    live,
    h(
      'form',
      { onsubmit: send, 'aria-label': 'send a message' },
      h('label', { for: 'chat-input' }, 'Message'),
      input,
      h(
        'div',
        { class: 'actions' },
        h('button', { class: 'primary' }, 'Send'),
        h('button', { type: 'button', onclick: control('interrupt', { reason: 'interrupted in the console' }) }, 'Interrupt'),
        h('button', { type: 'button', onclick: control('pause', { reason: 'paused in the console' }) }, 'Pause'),
        h('button', { type: 'button', onclick: control('resume') }, 'Resume'),
        h('button', { type: 'button', class: 'danger', onclick: control('close', { reason: 'closed in the console' }) }, 'Close'),
      ),
      h(
        'div',
        { class: 'actions' },
        h('label', { class: 'inline', for: steerId }, 'Steer the running turn'),
        h('input', { id: steerId, type: 'text' }),
        h('button', { type: 'button', onclick: () => act({ label: 'steer', path: `/api/sessions/${encodeURIComponent(id)}/steer` }, { text: document.getElementById(steerId).value }, () => (document.getElementById(steerId).value = '')) }, 'Steer'),
      ),
    ),
  );
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey) send(e);
  });
  let timer = null;
  async function render() {
    let data;
    try {
      data = await api('GET', `/api/sessions/${encodeURIComponent(id)}`);
    } catch (e) {
      if (e instanceof Refused) return showRefused();
      return say(e.message, true);
    }
    const { state, transcript } = data;
    head.replaceChildren(h('h2', {}, 'Session ', h('span', { class: 'muted' }, id), ' ', badge(state.status)), budgetBars(state.usage.usage, state.usage.limits));
    const waiting = state.pendingApprovals.map((p) => toolCallCard({ type: 'tool_call', workflowId: id, workflowKind: 'session', callId: p.callId, toolName: p.name, input: p.input, reason: p.reason, diff: null, taskId: null }, render));
    side.replaceChildren(...waiting, ...(state.question ? [questionCard({ workflowId: id, callId: state.question.callId, question: state.question.question }, render)] : []));
    chat.replaceChildren(
      ...transcript.messages.flatMap((m) =>
        blocksOf(m).flatMap((b) => {
          if (b.type === 'text' && b.text) return [h('div', { class: `msg ${m.role}` }, b.text)];
          if (b.type === 'tool_use') return [h('div', { class: 'msg tool' }, h('strong', {}, `⚙ ${b.name}`), h('pre', {}, JSON.stringify(b.input, null, 2)))];
          if (b.type === 'tool_result') {
            const text = typeof b.content === 'string' ? b.content : (b.content ?? []).map((c) => c.text ?? '').join('\n');
            return [h('div', { class: 'msg tool' }, h('span', { class: 'muted' }, b.is_error ? 'tool error' : 'tool result'), h('pre', {}, text.slice(0, 2000)))];
          }
          return [];
        }),
      ),
    );
  }
  await render();
  const stop = follow(id, (topic, data) => {
    if (topic === 'model' && data.kind === 'delta' && data.block === 'text') {
      live.hidden = false;
      live.textContent += data.text;
    } else if (topic === 'model' && data.kind === 'start') {
      live.textContent = '';
    } else if (topic === 'events' || topic === 'end') {
      clearTimeout(timer);
      timer = setTimeout(async () => {
        await render();
        if (topic === 'end' || data?.kind === 'turn.completed' || data?.kind === 'session.turn_finished') {
          live.hidden = true;
          live.textContent = '';
        }
      }, 150);
    }
  });
  cleanup = () => {
    stop();
    clearTimeout(timer);
  };
}

// ---- router and keys -------------------------------------------------------------------

async function route() {
  cleanup();
  cleanup = () => {};
  say('');
  takeTokenFromFragment();
  const [, page = 'inbox', ...rest] = location.hash.replace(/^#/, '').split('/');
  const id = decodeURIComponent(rest.join('/'));
  for (const a of document.querySelectorAll('[data-nav]')) a.toggleAttribute('aria-current', false);
  document.querySelector(`[data-nav="${page}"]`)?.setAttribute('aria-current', 'page');
  if (!token()) return showRefused();
  document.title = `Keel · ${page}${id ? ` ${id}` : ''}`;
  if (page === 'list') return listPage(new URLSearchParams());
  if (page === 'new') return newPage();
  if (page === 'goal' && id) return goalPage(id);
  if (page === 'session' && id) return sessionPage(id);
  return inboxPage();
}

let pendingG = false;
document.addEventListener('keydown', (e) => {
  const typing = e.target.closest?.('input, textarea, select');
  if (e.key === 'Escape' && typing) return e.target.blur();
  if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === '?') return document.getElementById('help').showModal();
  if (pendingG) {
    pendingG = false;
    const to = { i: '#/inbox', l: '#/list', n: '#/new' }[e.key];
    if (to) location.hash = to;
    return;
  }
  if (e.key === 'g') return (pendingG = true);
  const items = [...document.querySelectorAll('.inbox-item')];
  if (!items.length) return;
  const current = document.activeElement?.closest('.inbox-item');
  if (e.key === 'j' || e.key === 'k') {
    const i = items.indexOf(current);
    const next = items[Math.max(0, Math.min(items.length - 1, i + (e.key === 'j' ? 1 : -1)))] ?? items[0];
    next.focus();
    return e.preventDefault();
  }
  const target = current ?? items[0];
  const action = target.keel?.[e.key];
  if (action) {
    e.preventDefault();
    action();
  }
});
document.getElementById('keys-help').addEventListener('click', () => document.getElementById('help').showModal());
window.addEventListener('hashchange', route);
route();
