// Talking to `keel serve`: every request carries the bearer token, which the browser keeps
// for this origin (localStorage) until the person signs out. There are no cookies, so a
// page elsewhere cannot ride on a signed-in browser (no CSRF).
const TOKEN_KEY = 'keel-token';

export class Refused extends Error {}

export const token = (): string | null => localStorage.getItem(TOKEN_KEY);

export function setToken(value: string): void {
  localStorage.setItem(TOKEN_KEY, value.trim());
  window.dispatchEvent(new Event('keel:token'));
}

export function signOut(): void {
  localStorage.removeItem(TOKEN_KEY);
  window.dispatchEvent(new Event('keel:token'));
}

/** A refused request (401) tells the app, which then asks for a token on the same page. */
function refused(): never {
  window.dispatchEvent(new Event('keel:refused'));
  throw new Refused('refused');
}

export async function api<T = unknown>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const t = token();
  if (!t) refused();
  const res = await fetch(path, {
    method,
    headers: { Authorization: `Bearer ${t}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    credentials: 'omit',
  });
  if (res.status === 401) refused();
  const data = (res.headers.get('content-type')?.includes('json') ? await res.json() : null) as (T & { reason?: string; detail?: string }) | null;
  if (!res.ok) throw new Error(data?.reason ?? data?.detail ?? `${res.status} ${res.statusText}`);
  return data as T;
}

/** The status line under the header (a live region): what was done, or what went wrong. */
export function say(text: string, error = false): void {
  const box = document.getElementById('status');
  if (!box) return;
  box.textContent = text;
  box.classList.toggle('error', error);
}

/** Runs one action, saying what it acted on, and whether it worked. */
export async function act(label: string, path: string, body?: unknown): Promise<boolean> {
  try {
    say(`${label}…`);
    await api('POST', path, body);
    say(`${label}: done`);
    return true;
  } catch (e) {
    if (e instanceof Refused) return false;
    say(`${label}: ${e instanceof Error ? e.message : String(e)}`, true);
    return false;
  }
}

export const enc = encodeURIComponent;
