// Any agent's conversation, from its stream (packages/react/src/http/run-conversation.ts): what
// the model wrote in each call, the tools it called and what they answered, what was approved
// or denied. The task agent's page shows it; a sub-agent's page can show it the same way.
import { conversationOf } from '../../../packages/react/src/http/run-conversation';
import type { RunStream } from './run-state';

export function RunConversation({ run, label = 'conversation' }: { run: RunStream; label?: string }) {
  const entries = conversationOf(run);
  if (!entries.length) return (<p class="muted">{run.ended ? 'Nothing was said.' : 'Nothing yet.'}</p>);
  return (<div class="chat" role="log" aria-label={label}>
    {entries.map((e) => {
      switch (e.type) {
        case 'model':
          return (<div key={e.key} class={`msg assistant${e.call.state === 'streaming' ? ' streaming' : ''}`}>
            {e.call.thinking ? (<details class="thinking"><summary>thinking</summary>{e.call.thinking}</details>) : null}
            {e.call.text}{e.call.state === 'cut' ? (<span class="muted"> (interrupted)</span>) : null}
          </div>);
        case 'tool_call':
          return (<div key={e.key} class="msg tool"><strong>⚙ {e.toolName}</strong><pre>{JSON.stringify(e.input, null, 2)}</pre></div>);
        case 'tool_result':
          return (<div key={e.key} class={`msg tool${e.status === 'success' ? '' : ' bad'}`}><span class="muted">{e.status === 'success' ? 'tool result' : `tool ${e.status}`}</span><pre>{e.output.slice(0, 2000)}</pre></div>);
        case 'decision':
          return (<div key={e.key} class="msg note muted">{e.kind === 'approval_requested' ? `waits for approval${e.reason ? `: ${e.reason}` : ''}` : e.kind === 'approved' ? `approved by ${e.by ?? 'someone'}` : `denied by ${e.by ?? 'someone'}${e.reason ? `: ${e.reason}` : ''}`}</div>);
        default: {
          const never: never = e;
          return never;
        }
      }
    })}
  </div>);
}
