// A task's agent: its model text (and thinking) and every event, from its own stream; its
// calls are answered on its goal, linked here.
import { enc } from '../api';
import { ModelText, Timeline, useRunStream } from '../timeline';
import { SubAgentTree } from '../sub-agent-tree';


export function AgentPage({ id }: { id: string }) {
  const run = useRunStream(id);
  const goalId = id.includes('/') ? id.slice(0, id.indexOf('/')) : null;
  // A sub-agent (`<parent>/agent-<callId>`): its parent is the id before the last `/agent-`.
  const parentId = /\/agent-[^/]+$/.test(id) ? id.slice(0, id.lastIndexOf('/agent-')) : null;
  return (<div id="agent">
    <h2>Agent <span class="muted id">{id}</span> {run.ended ? (<span class="badge">ended</span>) : (<span class="badge running">running</span>)}</h2>
    {parentId ? (<p>Sub-agent of <a href={`#/${parentId.includes('/agent-') ? 'agent' : 'session'}/${enc(parentId)}`}>{parentId}</a> (its approvals are answered on the session).</p>) : null}
    <SubAgentTree events={run.events} />
    {goalId && !parentId ? (<p>Task agent of goal <a href={`#/goal/${enc(goalId)}`}>{goalId}</a> (its approvals are answered there).</p>) : null}
    <h3>Model text</h3>
    <ModelText calls={run.calls} />
    <h3>Events</h3>
    <Timeline events={run.events} />
  </div>);
}
