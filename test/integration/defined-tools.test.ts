// A tool added by one defineTool call and nothing else (test/fixtures/custom-tools.ts, handed to
// the worker as a user would: createKeelWorker({ tools })) works end to end: the model is
// offered it, calls it and gets its result; bad input and a ToolError come back to the model as
// tool errors, not as activity failures; the policy judges it by the kind it declared (a write
// asks in mode ask). And client tools are decided by the same policy: a deny rule refuses one,
// the others run as before.
import { describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/index';
import { eventsQuery } from '../../workflows/definitions';
import { shoutTool, stampTool } from '../fixtures/custom-tools';
import { recordHistory, say, sessionEnv, use, waitUntil } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

type Body = { tools?: { name: string; input_schema: unknown }[]; messages?: { role: string; content: unknown }[] };

/** The tool_result blocks the model was sent in request `n` (1-based). */
function toolResultsIn(requests: { body: unknown }[], n: number): { tool_use_id: string; content: unknown; is_error?: boolean }[] {
  const last = (requests[n - 1]?.body as Body | undefined)?.messages?.at(-1);
  if (!last || !Array.isArray(last.content)) return [];
  return (last.content as { type: string; tool_use_id: string; content: unknown; is_error?: boolean }[]).filter((b) => b.type === 'tool_result');
}

const mapTool = { name: 'show_map', description: 'Shows a map in the browser.', inputSchema: { type: 'object' as const, properties: { city: { type: 'string' } } } };
const deleteTool = { name: 'delete_account', description: "Deletes the user's account.", inputSchema: { type: 'object' as const } };

describe('tools a worker defines', () => {
  it('are offered, called and answered like the built-in ones, judged by their kind; client tools by the policy', { timeout: 120_000 }, async () => {
    const s = await sessionEnv(
      env,
      workflowBundle,
      {
        rules: [
          // The session with client tools (they are offered only in its message's turn).
          { match: { toolsOffered: ['delete_account'], turn: 1 }, reply: use('delete_account', {}, 'toolu_delete') },
          { match: { toolsOffered: ['delete_account'], turn: 2 }, reply: use('show_map', { city: 'Oslo' }, 'toolu_map') },
          { match: { toolsOffered: ['delete_account'], turn: 3 }, reply: say('Map shown.') },
          // The session with the worker's tools.
          { match: { turn: 1 }, reply: use('shout', { text: 'hello', times: 2 }, 'toolu_shout') },
          { match: { turn: 2 }, reply: use('shout', { text: 'hello', times: 9 }, 'toolu_bad') },
          { match: { turn: 3 }, reply: use('shout', { text: 'forbidden word' }, 'toolu_refused') },
          { match: { turn: 4 }, reply: use('stamp', { word: 'approved' }, 'toolu_stamp') },
          { match: {}, reply: say('Done.') },
        ],
      },
      {},
      { tools: [shoutTool, stampTool] },
    );
    await s.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
      const session = await keel.startSession({ workspace: s.workspace, policy: { mode: 'ask' } });
      const turn = session.send('use your tools');
      // A write of the worker's own: the policy asks, as for write_file.
      const pending = await waitUntil(() => session.pendingApprovals(), (p) => p.length > 0, 60_000, 'stamp waiting for approval');
      expect(pending).toEqual([expect.objectContaining({ callId: 'toolu_stamp', name: 'stamp', input: { word: 'approved' } })]);
      await session.approve('toolu_stamp');
      const result = await turn;
      expect(result.outcome).toBe('completed');
      expect(result.output).toBe('Done.');

      const requests = s.standin.requests;
      expect(requests).toHaveLength(5);
      // Offered after the built-in tools, with the JSON Schema of its zod input.
      const offered = (requests[0]!.body as Body).tools ?? [];
      expect(offered.map((t) => t.name)).toEqual(['read_file', 'list_dir', 'glob', 'grep', 'write_file', 'edit_file', 'run_command', 'ask_user', 'shout', 'stamp']);
      expect(offered.find((t) => t.name === 'shout')?.input_schema).toMatchObject({ type: 'object', required: ['text'], additionalProperties: false });
      expect(toolResultsIn(requests, 2)).toEqual([expect.objectContaining({ tool_use_id: 'toolu_shout', content: 'HELLO HELLO' })]);
      expect(toolResultsIn(requests, 2)[0]?.is_error).not.toBe(true);
      // Bad input and a ToolError: tool errors the model can act on.
      expect(toolResultsIn(requests, 3)).toEqual([expect.objectContaining({ tool_use_id: 'toolu_bad', is_error: true, content: expect.stringMatching(/^invalid input for shout:\n- times:/) as unknown })]);
      expect(toolResultsIn(requests, 4)).toEqual([expect.objectContaining({ tool_use_id: 'toolu_refused', is_error: true, content: 'shout: that text may not be shouted' })]);
      expect(toolResultsIn(requests, 5)).toEqual([expect.objectContaining({ tool_use_id: 'toolu_stamp', content: 'stamped approved' })]);
      // Each ran as a runTool activity that completed: none failed as an activity.
      const events = (await session.workflowHandle.fetchHistory()).events ?? [];
      expect(events.filter((e) => e.activityTaskFailedEventAttributes)).toEqual([]);
      const { entries } = await session.workflowHandle.query(eventsQuery, { from: 0, limit: 500 });
      const results = entries.flatMap((e) => (e.kind === 'tool.result' ? [[e.callId, e.status]] : []));
      expect(results).toEqual([
        ['toolu_shout', 'success'],
        ['toolu_bad', 'error'],
        ['toolu_refused', 'error'],
        ['toolu_stamp', 'success'],
      ]);
      await session.close();
      await recordHistory(session.workflowHandle, 'defined-tools');

      // Client tools: allowed unless the policy says otherwise; a deny rule refuses one, and its call never reaches the client.
      const clientSession = await keel.startSession({ workspace: s.workspace, policy: { mode: 'ask', deny: ['delete_account'] } });
      await clientSession.post('client tools please', undefined, { clientTools: [mapTool, deleteTool] });
      const waiting = await waitUntil(() => clientSession.state(), (st) => (st.clientToolCalls?.length ?? 0) > 0, 60_000, 'show_map sent to the client');
      expect(waiting.clientToolCalls).toEqual([{ callId: 'toolu_map', name: 'show_map', input: { city: 'Oslo' } }]);
      await clientSession.clientToolResult('toolu_map', 'shown');
      const done = await waitUntil(() => clientSession.state(), (st) => (st.usage.perTurn?.length ?? 0) > 0, 60_000, 'the client tools turn');
      expect(done.usage.perTurn?.[0]?.outcome).toBe('completed');
      const clientLog = (await clientSession.workflowHandle.query(eventsQuery, { from: 0, limit: 500 })).entries;
      expect(clientLog.flatMap((e) => (e.kind === 'tool.client_requested' ? [e.callId] : []))).toEqual(['toolu_map']);
      const all = s.standin.requests;
      const refused = toolResultsIn(all, all.length - 1);
      expect(refused).toEqual([expect.objectContaining({ tool_use_id: 'toolu_delete', is_error: true, content: expect.stringContaining('delete_account matches deny rule delete_account') as unknown })]);
      expect(toolResultsIn(all, all.length)).toEqual([expect.objectContaining({ tool_use_id: 'toolu_map', content: 'shown' })]);
      await clientSession.close();
      // A client tool a rule refused: the patch marker of client tools decided by the policy.
      await recordHistory(clientSession.workflowHandle, 'client-tool-denied');
    });
  });
});
