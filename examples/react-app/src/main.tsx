// A React app on @keel/react: start a session (or open one with ?session=), send messages,
// watch the reply as it is written, approve or deny tool calls, answer the model's question,
// interrupt a turn. The server and token come from the page's address:
//   http://localhost:5173/?server=http://127.0.0.1:8280&token=…
// (the page's origin must be in the server's KEEL_CORS_ORIGINS).
import { useState, type FormEvent } from 'react';
import { createRoot } from 'react-dom/client';
import { KeelProvider, useKeel, useSession, type Message } from '@keel/react';

const params = new URLSearchParams(location.search);
const server = params.get('server') ?? '';
const token = params.get('token') ?? '';

const resultOf = (content: unknown): string =>
  typeof content === 'string' ? content : Array.isArray(content) ? content.map((c: { text?: string }) => c.text ?? '').join('') : '';
/** A message as text: what was said, the tools called (⚙) and what they answered (↳). */
const textOf = (m: Message): string =>
  typeof m.content === 'string'
    ? m.content
    : m.content.map((b) => (b.type === 'text' ? (b.text ?? '') : b.type === 'tool_use' ? `⚙ ${b.name ?? ''}` : b.type === 'tool_result' ? `↳ ${resultOf(b.content).slice(0, 200)}` : '')).filter(Boolean).join('\n');

function Session({ id }: { id: string }) {
  const s = useSession(id);
  const [text, setText] = useState('');
  const [answer, setAnswer] = useState('');
  const send = (e: FormEvent) => {
    e.preventDefault();
    if (!text.trim()) return;
    void s.send(text);
    setText('');
  };
  return (
    <section aria-label="session">
      <h2>
        Session <code>{id}</code> <span data-testid="status">{s.status ?? '…'}</span>
        {s.trouble ? <span className="error"> model {s.trouble.state}</span> : null}
      </h2>
      <div role="log" aria-label="conversation">
        {s.messages.map((m, i) => {
          const t = textOf(m);
          return t ? <div key={i} className={`msg ${m.role}`}>{t}</div> : null;
        })}
      </div>
      {s.liveText ? <div className="msg assistant live" data-testid="live">{s.liveText}</div> : null}
      {s.calls.filter((c) => c.state === 'cut').map((c) => (
        <div key={c.key} className="msg assistant" data-testid="cut">{c.text} <em>(interrupted)</em></div>
      ))}
      {s.approvals.map((a) => (
        <div key={a.callId} className="approval" data-testid="approval">
          <strong>{a.name}</strong> wants to run <pre>{JSON.stringify(a.input, null, 2)}</pre>
          {a.agent ? <p>asked by sub-agent {a.agent.label}</p> : null}
          <button onClick={() => void s.approve(a.callId)}>Approve</button>{' '}
          <button onClick={() => void s.deny(a.callId, 'denied from the React app')}>Deny</button>
        </div>
      ))}
      {s.question ? (
        <form className="question" onSubmit={(e) => (e.preventDefault(), void s.answer(answer), setAnswer(''))}>
          <label htmlFor="answer">{s.question.question}</label> <input id="answer" value={answer} onChange={(e) => setAnswer(e.target.value)} />{' '}
          <button>Answer</button>
        </form>
      ) : null}
      <form onSubmit={send}>
        <label htmlFor="message">Message</label> <input id="message" value={text} onChange={(e) => setText(e.target.value)} size={40} />{' '}
        <button>Send</button> <button type="button" onClick={() => void s.interrupt('interrupted from the React app')}>Interrupt</button>
      </form>
      {s.error ? <p className="error" role="alert">{s.error.message}</p> : null}
      <p>{s.view ? `${s.view.state.usage.turns} turns · $${s.view.state.usage.usage.costUsd.toFixed(4)}` : ''}</p>
    </section>
  );
}

function App() {
  const keel = useKeel();
  const [id, setId] = useState<string | null>(params.get('session'));
  const [error, setError] = useState<string | null>(null);
  const start = async () => {
    try {
      setId((await keel.startSession({ mode: 'ask' })).id);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  };
  return (
    <main>
      <h1>Keel from React</h1>
      {id ? <Session id={id} /> : <button onClick={() => void start()}>Start a session</button>}
      {error ? <p className="error" role="alert">{error}</p> : null}
    </main>
  );
}

createRoot(document.getElementById('root')!).render(
  <KeelProvider baseUrl={server} token={token}>
    <App />
  </KeelProvider>,
);
