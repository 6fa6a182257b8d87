// Everything waiting for a human, polled (it spans every workflow). Items are keyed by
// identity, so a card that has focus keeps it, and text typed into it stays, as others arrive.
import { useEffect, useState } from 'preact/hooks';
import { api, Refused, say } from '../api';
import { ItemList } from '../cards';
import type { InboxItem } from '../types';


/** The inbox, polled; `version` (a workflow page's event count) reads it again at once on each event. */
export function useInbox(intervalMs = 1500, version = 0): InboxItem[] | null {
  const [items, setItems] = useState<InboxItem[] | null>(null);
  useEffect(() => {
    let stopped = false;
    let key = '';
    const load = async () => {
      try {
        const r = await api<{ items: InboxItem[] }>('GET', '/api/inbox');
        const next = JSON.stringify(r.items);
        if (!stopped && next !== key) {
          key = next;
          setItems(r.items);
        }
      } catch (e) {
        if (!(e instanceof Refused)) say(e instanceof Error ? e.message : String(e), true);
      }
    };
    // Events come in bursts: read once they settle.
    const first = setTimeout(() => void load(), version === 0 ? 0 : 150);
    const timer = setInterval(() => void load(), intervalMs);
    const now = () => void load();
    window.addEventListener('keel:acted', now);
    return () => {
      stopped = true;
      clearTimeout(first);
      clearInterval(timer);
      window.removeEventListener('keel:acted', now);
    };
  }, [intervalMs, version]);
  return items;
}

export function InboxPage() {
  const items = useInbox();
  useEffect(() => {
    const count = document.getElementById('inbox-count');
    if (count) count.textContent = items?.length ? String(items.length) : '';
  }, [items]);
  return (<div>
    <h2>Inbox</h2>
    <p class="muted">Everything waiting for a human. <kbd>j</kbd>/<kbd>k</kbd> to move, then one key to answer the focused item (<kbd>?</kbd> lists them).</p>
    {items === null ? (<p class="muted">Loading…</p>) : items.length ? (<ItemList items={items} label="waiting for a human" />) : (<p class="empty">Nothing is waiting for you.</p>)}
  </div>);
}

/** The items of one workflow (with diffs), for its own page. */
export function WaitingFor({ id, version }: { id: string; version: number }) {
  const items = useInbox(2000, version);
  const mine = (items ?? []).filter((i) => i.workflowId === id);
  if (!mine.length) return null;
  return (<section aria-labelledby="waiting-title"><h3 id="waiting-title">Waiting for you</h3><ItemList items={mine} label="waiting for you" /></section>);
}
