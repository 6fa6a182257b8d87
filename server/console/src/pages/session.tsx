// A session: its conversation (keyed: new messages are added, nothing is re-announced),
// the reply being streamed, what waits for you (with diffs), controls, usage per turn,
// why it failed or stopped, and every event.
import { useState } from 'preact/hooks';
import { act, enc } from '../api';
import { AtAGlance } from '../glance';
import { TurnCheckpoints } from '../checkpoints';
import { modelTrouble } from '../run-state';
import { ModelText, Timeline, useRunStream } from '../timeline';
import type { StateView, TranscriptPage } from '../types';
import { Badge, BudgetBars } from '../ui';
import { useRefreshed } from './goal';
import { WaitingFor } from './inbox';
import { SubAgentTree } from '../sub-agent-tree';

type Block = { type: string; text?: string; name?: string; input?: unknown; content?: unknown; is_error?: boolean; thinking?: string };
type Message = { role: string; content: string | Block[] };

const blocksOf = (m: Message): Block[] => (typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : (m.content ?? []));
const resultText = (b: Block) => (typeof b.content === 'string' ? b.content : Array.isArray(b.content) ? (b.content as Array<{ text?: string }>).map((c) => c.text ?? '').join('\n') : '');

function Transcript({ messages }: { messages: Message[] }) {
  return (<div class="chat" id="chat" role="log" aria-label="conversation" aria-live="polite">
    {messages.flatMap((m, i) =>
      blocksOf(m).flatMap((b, j) => {
        const key = `${i}.${j}`;
        if (b.type === 'text' && b.text) return [(<div key={key} class={`msg ${m.role}`}>{b.text}</div>)];
        if (b.type === 'thinking' && b.thinking) return [(<details key={key} class="msg assistant thinking"><summary>thinking</summary>{b.thinking}</details>)];
        if (b.type === 'tool_use') return [(<div key={key} class="msg tool"><strong>⚙ {b.name}</strong><pre>{JSON.stringify(b.input, null, 2)}</pre></div>)];
        if (b.type === 'tool_result') return [(<div key={key} class="msg tool"><span class="muted">{b.is_error ? 'tool error' : 'tool result'}</span><pre>{resultText(b).slice(0, 2000)}</pre></div>)];
        return [];
      }),
    )}
  </div>);
}

const SHOW_REASON = new Set(['failed', 'suspended', 'paused', 'closing', 'closed']);

export function SessionPage({ id }: { id: string }) {
  const run = useRunStream(id);
  const data = useRefreshed<{ state: StateView; transcript: TranscriptPage }>(`/api/sessions/${enc(id)}`, run.version);
  const [text, setText] = useState('');
  const [steer, setSteer] = useState('');
  const [sent, setSent] = useState<string[]>([]);
  const path = (op: string) => `/api/sessions/${enc(id)}/${op}`;
  const send = async (e: Event) => {
    e.preventDefault();
    const t = text.trim();
    if (!t) return;
    setText('');
    setSent((s) => [...s, t]);
    await act(`send to ${id}`, path('messages'), { text: t });
  };
  if (!data) return (<p class="muted">Loading {id}…</p>);
  const { state, transcript } = data;
  const messages = transcript.messages as unknown as Message[];
  // What was sent and is not in the conversation yet (it waits behind a running turn).
  const inTranscript = new Set(messages.filter((m) => m.role === 'user').flatMap((m) => blocksOf(m).map((b) => b.text ?? '')));
  const pending = sent.filter((t) => !inTranscript.has(t));
  const live = run.live;
  const trouble = modelTrouble(run.events);
  return (<div id="session">
    <h2>Session <span class="muted id">{id}</span> <Badge status={state.status} />{trouble ? (<span class={`badge ${trouble.state === 'failed' ? 'failed' : 'paused'}`}>{trouble.state === 'failed' ? 'model failed' : 'model retrying'}</span>) : null}</h2>
    {trouble ? (<section class="card report bad" aria-labelledby="model-trouble-title">
        <h3 id="model-trouble-title">{trouble.state === 'failed' ? 'The model could not answer' : 'The model call is being retried'}</h3>
        <p class="pre">{trouble.message}</p>
      </section>) : null}
    <AtAGlance run={run} costUsd={state.usage.usage.costUsd + (state.usage.turnUsage?.costUsd ?? 0)} unpricedCalls={state.usage.usage.unpricedCalls} />
    {SHOW_REASON.has(state.status) || state.reason
      ? (<section class={`card report ${state.status === 'failed' || state.status === 'suspended' ? 'bad' : ''}`} aria-labelledby="reason-title">
          <h3 id="reason-title">{state.status === 'failed' ? 'Failed' : state.status.replaceAll('_', ' ')}</h3>
          <p class="pre">{state.reason ?? 'No reason was recorded.'}</p>
        </section>)
      : null}
    <BudgetBars usage={state.usage.usage} limits={state.usage.limits} />
    <p class="muted">{state.usage.turns} turns{state.usage.turnUsage ? ` · this turn: ${state.usage.turnUsage.inputTokens} in, ${state.usage.turnUsage.outputTokens} out, $${state.usage.turnUsage.costUsd.toFixed(4)}` : ''}</p>
    <TurnUsageTable turns={state.usage.perTurn ?? []} />
    <TurnCheckpoints id={id} version={run.version} />
    <WaitingFor id={id} version={run.version} />
    <SubAgentTree events={run.events} />
    <Transcript messages={messages} />
    {pending.map((t) => (<div key={`pending-${t}`} class="msg user pending">{t} <span class="muted">(queued)</span></div>))}
    {live && live.text ? (<div class="msg assistant streaming" aria-label="reply being written">{live.text}</div>) : null}
    <form onSubmit={(e: Event) => void send(e)} aria-label="send a message">
      <label for="chat-input">Message</label>
      <textarea id="chat-input" name="text" rows={2} required value={text}
        onInput={(e: Event) => setText((e.target as HTMLTextAreaElement).value)}
        onKeyDown={(e: KeyboardEvent) => e.key === 'Enter' && !e.shiftKey && void send(e)}></textarea>
      <div class="actions">
        <button class="primary">Send</button>
        <button type="button" onClick={() => void act(`interrupt ${id}`, path('interrupt'), { reason: 'interrupted in the console' })}>Interrupt</button>
        <button type="button" onClick={() => void act(`pause ${id}`, path('pause'), { reason: 'paused in the console' })}>Pause</button>
        <button type="button" onClick={() => void act(`resume ${id}`, path('resume'))}>Resume</button>
        <button type="button" class="danger" onClick={() => void act(`close ${id}`, path('close'), { reason: 'closed in the console' })}>Close</button>
      </div>
      <div class="actions">
        <label class="inline" for="steer-text">Steer the running turn</label>
        <input id="steer-text" type="text" value={steer} onInput={(e: Event) => setSteer((e.target as HTMLInputElement).value)} />
        <button type="button" onClick={() => void act(`steer ${id}`, path('steer'), { text: steer }).then((sent) => sent && setSteer(''))}>Steer</button>
      </div>
    </form>
    <details><summary>Model calls ({run.calls.length})</summary><ModelText calls={run.calls} /></details>
    <h3>Events</h3>
    <Timeline events={run.events} />
  </div>);
}

/** Tokens and cost of each finished turn (the newest 100), newest first. */
function TurnUsageTable({ turns }: { turns: NonNullable<StateView['usage']['perTurn']> }) {
  if (turns.length === 0) return null;
  const rows = [...turns].reverse();
  return (<details class="card turn-usage" open={turns.length <= 5}>
    <summary>Usage per turn ({turns.length})</summary>
    <table>
      <caption class="visually-hidden">Tokens and cost of each turn</caption>
      <thead><tr><th scope="col">turn</th><th scope="col">outcome</th><th scope="col">input tokens</th><th scope="col">output tokens</th><th scope="col">cost</th></tr></thead>
      <tbody>
        {rows.map(
          (t, i) => (<tr key={t.turnId}>
            <th scope="row" title={t.turnId}>{turns.length - i}</th>
            <td>{t.outcome}</td>
            <td>{t.usage ? t.usage.inputTokens.toLocaleString() : '—'}</td>
            <td>{t.usage ? t.usage.outputTokens.toLocaleString() : '—'}</td>
            <td>{t.usage ? `$${t.usage.costUsd.toFixed(4)}` : '—'}</td>
          </tr>),
        )}
      </tbody>
    </table>
  </details>);
}
