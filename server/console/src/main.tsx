// The Keel console: a small Preact app (JSX components, keyed rendering) compiled by esbuild
// into dist/console/app.js (server/console-bundle.ts). Routes live in the URL fragment, so a
// deep link survives asking for the token: after it is given, the same page opens.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { say, setToken, signOut, token } from './api';
import { focusedCard } from './cards';
import { AgentPage } from './pages/agent';
import { GoalPage } from './pages/goal';
import { InboxPage } from './pages/inbox';
import { ListPage } from './pages/list';
import { NewPage } from './pages/new';
import { SchedulesPage } from './pages/schedules';
import { SessionPage } from './pages/session';


type Route = { page: 'inbox' | 'list' | 'new' | 'schedules' | 'goal' | 'session' | 'agent'; id: string };

function parseRoute(hash: string): Route {
  const [, page = 'inbox', ...rest] = hash.replace(/^#/, '').split('/');
  const id = decodeURIComponent(rest.join('/'));
  if ((page === 'goal' || page === 'session' || page === 'agent') && id) return { page, id };
  if (page === 'list' || page === 'new' || page === 'schedules') return { page, id: '' };
  return { page: 'inbox', id: '' };
}

/** `#token=…` (the link `keel serve` prints): kept for this origin, then out of the URL. */
function takeTokenFromFragment(): void {
  const m = location.hash.match(/(?:^#|&)token=([^&]+)/);
  if (!m) return;
  setToken(decodeURIComponent(m[1]!));
  const rest = location.hash.replace(/(?:^#|&)token=[^&]+/, '').replace(/^&/, '#');
  history.replaceState(null, '', `${location.pathname}${rest.startsWith('#/') ? rest : '#/inbox'}`);
}

/** `#login=…` (the link `keel serve` prints at every start): a one-time code traded for a token. */
async function loginFromFragment(): Promise<void> {
  const m = location.hash.match(/(?:^#|&)login=([A-Za-z0-9_-]+)/);
  if (!m) return;
  history.replaceState(null, '', `${location.pathname}#/inbox`);
  const res = await fetch('/login', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code: m[1] }), credentials: 'omit' });
  if (res.ok) {
    setToken(((await res.json()) as { token: string }).token);
    say('Signed in: this browser keeps the token for this site until you sign out.');
  } else {
    say('That login link was used or has expired: `keel serve` prints a new one at each start.', true);
  }
}

function TokenForm({ refused }: { refused: boolean }) {
  const [value, setValue] = useState('');
  return (<div>
    <h2>Token needed</h2>
    <p role="alert" id="refused">{refused && token() ? 'Refused: this token is not accepted by the server.' : 'Refused: this page needs the API token.'}</p>
    <p>Open the link <code>keel serve</code> printed, or paste a token here. This browser keeps it for this site until you sign out; the page you asked for opens next.</p>
    <form onSubmit={(e: Event) => {
      e.preventDefault();
      if (value.trim()) setToken(value);
    }}>
      <label for="token-input">API token</label>
      <input id="token-input" name="token" type="password" autocomplete="off" required value={value} onInput={(e: Event) => setValue((e.target as HTMLInputElement).value)} />
      <div class="actions"><button class="primary">Use token</button></div>
    </form>
  </div>);
}

function Page({ route }: { route: Route }) {
  switch (route.page) {
    case 'inbox':
      return (<InboxPage />);
    case 'list':
      return (<ListPage />);
    case 'new':
      return (<NewPage />);
    case 'schedules':
      return (<SchedulesPage />);
    case 'goal':
      return (<GoalPage key={route.id} id={route.id} />);
    case 'session':
      return (<SessionPage key={route.id} id={route.id} />);
    case 'agent':
      return (<AgentPage key={route.id} id={route.id} />);
  }
}

function App() {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  const [hasToken, setHasToken] = useState(() => token() !== null);
  const [refused, setRefused] = useState(false);
  useEffect(() => {
    const onHash = () => {
      takeTokenFromFragment();
      void loginFromFragment();
      setRoute(parseRoute(location.hash));
      say('');
    };
    const onToken = () => {
      setHasToken(token() !== null);
      setRefused(false);
    };
    const onRefused = () => setRefused(true);
    window.addEventListener('hashchange', onHash);
    window.addEventListener('keel:token', onToken);
    window.addEventListener('keel:refused', onRefused);
    // Effects run after the first frame: a login link's token that arrived before this one
    // (a local server answers /login in a few ms) told no listener. Take the state as it is now.
    setHasToken(token() !== null);
    return () => {
      window.removeEventListener('hashchange', onHash);
      window.removeEventListener('keel:token', onToken);
      window.removeEventListener('keel:refused', onRefused);
    };
  }, []);
  useEffect(() => {
    for (const a of document.querySelectorAll('[data-nav]')) a.toggleAttribute('aria-current', false);
    document.querySelector(`[data-nav="${route.page}"]`)?.setAttribute('aria-current', 'page');
    document.title = `Keel · ${route.page}${route.id ? ` ${route.id}` : ''}`;
    const out = document.getElementById('sign-out');
    if (out) out.hidden = !hasToken;
  }, [route, hasToken]);
  if (!hasToken || refused) return (<TokenForm refused={refused} />);
  return (<Page route={route} />);
}

// ---- keys: one key acts on the focused card only ---------------------------------------

let pendingG = false;
document.addEventListener('keydown', (e) => {
  const target = e.target as HTMLElement | null;
  const typing = target?.closest?.('input, textarea, select');
  if (e.key === 'Escape' && typing) return target?.blur();
  if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === '?') return (document.getElementById('help') as HTMLDialogElement).showModal();
  if (pendingG) {
    pendingG = false;
    const to = ({ i: '#/inbox', l: '#/list', n: '#/new' } as Record<string, string>)[e.key];
    if (to) location.hash = to;
    return;
  }
  if (e.key === 'g') return void (pendingG = true);
  const items = [...document.querySelectorAll<HTMLElement>('.inbox-item')];
  if (e.key === 'j' || e.key === 'k') {
    if (!items.length) return;
    const current = document.activeElement?.closest<HTMLElement>('.inbox-item') ?? null;
    const i = current ? items.indexOf(current) : -1;
    const next = i < 0 ? items[e.key === 'j' ? 0 : items.length - 1] : items[Math.max(0, Math.min(items.length - 1, i + (e.key === 'j' ? 1 : -1)))];
    next?.focus();
    return e.preventDefault();
  }
  if (!'asdet'.includes(e.key) || e.key.length !== 1) return;
  const card = focusedCard();
  if (!card) {
    // Never the first item by default: nothing happens without a chosen item.
    if (items.length) say(`Nothing selected: press j to choose an item, then ${e.key}.`, true);
    return;
  }
  const action = card.keys[e.key];
  if (action) {
    e.preventDefault();
    action();
  }
});

// ---- theme: light, dark, or the system's ------------------------------------------------

const THEME_KEY = 'keel-theme';
function applyTheme(theme: string | null): void {
  if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
  const b = document.getElementById('theme');
  if (b) b.textContent = theme === 'dark' ? 'Dark' : theme === 'light' ? 'Light' : 'Auto';
}
applyTheme(localStorage.getItem(THEME_KEY));
document.getElementById('theme')?.addEventListener('click', () => {
  const next = ({ null: 'dark', dark: 'light', light: null } as Record<string, string | null>)[String(localStorage.getItem(THEME_KEY))] ?? null;
  if (next) localStorage.setItem(THEME_KEY, next);
  else localStorage.removeItem(THEME_KEY);
  applyTheme(next);
});
document.getElementById('sign-out')?.addEventListener('click', () => {
  signOut();
  say('Signed out: this browser no longer keeps the token.');
});
document.getElementById('keys-help')?.addEventListener('click', () => (document.getElementById('help') as HTMLDialogElement).showModal());

takeTokenFromFragment();
void loginFromFragment();
render((<App />), document.getElementById('main')!);
