// A task's agent: cost, steps and time at a glance, its conversation (model text, tool calls
// and results, approvals) and every event, from its own stream; its calls are answered on its
// goal, linked here, whose usage view prices the agent.
import { enc } from '../api';
import { RunConversation } from '../conversation';
import { AtAGlance } from '../glance';
import { ModelText, Timeline, useRunStream } from '../timeline';
import type { GoalStateView } from '../types';
import { useRefreshed } from './goal';
import { SubAgentTree } from '../sub-agent-tree';

export function AgentPage({ id }: { id: string }) {
  const run = useRunStream(id);
  // A sub-agent (`<parent>/agent-<callId>`): its parent is the id before the last `/agent-`.
  const parentId = /\/agent-[^/]+$/.test(id) ? id.slice(0, id.lastIndexOf('/agent-')) : null;
  // A goal's task agent (`<goal>/<task>`).
  const goalId = parentId === null && id.includes('/') ? id.slice(0, id.indexOf('/')) : null;
  const goal = useRefreshed<{ state: GoalStateView }>(goalId ? `/api/goals/${enc(goalId)}` : null, run.version);
  const usage = goal?.state.usage.agents[id];
  return (<div id="agent">
    <h2>Agent <span class="muted id">{id}</span> {run.ended ? (<span class="badge">ended</span>) : (<span class="badge running">running</span>)}</h2>
    <AtAGlance run={run} costUsd={usage?.costUsd ?? null} unpricedCalls={usage?.unpricedCalls ?? 0} />
    {parentId ? (<p>Sub-agent of <a href={`#/${parentId.includes('/agent-') ? 'agent' : 'session'}/${enc(parentId)}`}>{parentId}</a> (its approvals are answered on the session).</p>) : null}
    <SubAgentTree events={run.events} />
    {goalId ? (<p>Task agent of goal <a href={`#/goal/${enc(goalId)}`}>{goalId}</a> (its approvals are answered there).</p>) : null}
    <h3>Conversation</h3>
    <RunConversation run={run} />
    <details><summary>Model calls ({run.calls.length})</summary><ModelText calls={run.calls} /></details>
    <h3>Events</h3>
    <Timeline events={run.events} />
  </div>);
}
