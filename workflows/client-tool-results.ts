// A client tool call's result, from the client that declared the tool (workflows/client-tools.ts):
// the `clientToolResult` update, whose validator knows the calls waiting for a client.
import { setHandler } from '@temporalio/workflow';
import type { TransitionError, TurnState } from '../machines/index';
import { isTerminalCall } from '../machines/tool-call';
import { clientToolResultSchema, type ClientTools } from './client-tools';
import { clientToolResultUpdate, type ControlResult } from './definitions';
import { parsePayload as parse } from './payloads';
import { refusal, validated } from './refusal';
import type { TurnRunner } from './turn-runner';

export interface ClientResultHost {
  turns: TurnRunner;
  clientTools: ClientTools;
  current: () => TurnState | null;
  post: (work: () => void) => void;
  rejected: (source: string, error: TransitionError) => void;
  status: () => ControlResult;
}

export function clientToolResultHandler({ turns, clientTools, current, post, rejected, status }: ClientResultHost): void {
  const clientCallOf = (callId: string): boolean => {
    const s = turns.state;
    const turnId = turns.turnId;
    if (s === null || turnId === null || s.status !== 'executing_tools' || current() === null) return false;
    return s.calls.some((c) => c.callId === callId && !isTerminalCall(c) && clientTools.has(turnId, c.name));
  };
  const clientResult = (raw: unknown) => {
    const r = parse(clientToolResultSchema, raw, 'clientToolResult');
    if (!clientTools.waits(r.callId) && !clientCallOf(r.callId)) {
      const waiting = clientTools.calls().map((c) => c.callId);
      throw refusal('unknown_call', `unknown call id ${r.callId}: ${waiting.length === 0 ? 'no client tool call is waiting' : `waiting for the client: ${waiting.join(', ')}`}`);
    }
    return r;
  };
  setHandler(
    clientToolResultUpdate,
    (raw) => {
      const r = clientResult(raw);
      post(() => {
        if (!clientTools.result(r.callId, { output: r.output, isError: r.isError ?? false }, clientCallOf(r.callId))) {
          rejected('update clientToolResult', { code: 'guard_failed', machine: 'turn', state: turns.state?.status ?? 'none', event: 'client_tool_result', message: `call ${r.callId} no longer waits` });
        }
      });
      return status();
    },
    { validator: (raw) => void validated(() => clientResult(raw)) },
  );
}
