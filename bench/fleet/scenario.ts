// What the stand-in answers in a fleet run. Each goal plans two tasks: `run` appends the line
// `run` to fx.log in its workspace with a command, `write` writes notes.txt; the critic passes.
// Each session turn t runs `echo t<t> >> fx.log` (a command its policy asks a human to approve),
// each canary probe k runs `echo c<k> >> fx.log` (no approval), then answers in words. So every
// side effect leaves one line in its workspace's fx.log, and a line found twice is a command
// run twice (the harness reads them: bench/fleet/check.ts).
// A task agent told that its call was cut off, or that an attempt before it ran (the retry
// agent's `describeAttempts`), checks before it appends, as a sensible model would.
import type { ScenarioInput } from '../../standin/scenario';

export const SIDE_EFFECT_LOG = 'fx.log';
export const TURN_ANSWER = 'Turn answered.';

const tool = (name: string, input: Record<string, unknown>) => ({ content: [{ type: 'tool_use' as const, name, input }] });
const command = (line: string) => tool('run_command', { command: `echo ${line} >> ${SIDE_EFFECT_LOG}` });
const guarded = (line: string) => tool('run_command', { command: `grep -qx ${line} ${SIDE_EFFECT_LOG} || echo ${line} >> ${SIDE_EFFECT_LOG}` });
const finish = { ...tool('finish_task', { status: 'succeeded', summary: 'Done.' }) };

/** The message of session turn `t` and of canary probe `k`: the rules below key on them. */
export const turnMessage = (session: number, t: number) => `session ${session}: turn ${t} go`;
export const canaryMessage = (k: number) => `canary ${k} go`;

export function fleetScenario(turns: number, canaries: number): ScenarioInput {
  return {
    name: 'fleet',
    rules: [
      {
        match: { toolsOffered: ['submit_plan'] },
        reply: tool('submit_plan', {
          tasks: [
            { id: 'run', title: 'Append the line', instructions: `Append the line run to ${SIDE_EFFECT_LOG}.` },
            { id: 'write', title: 'Write the notes', instructions: 'Write notes.txt.', dependencies: ['run'] },
          ],
        }),
      },
      { match: { toolsOffered: ['submit_review'] }, reply: tool('submit_review', { verdict: 'pass', findings: 'fx.log and notes.txt are there.' }) },
      { match: { systemContains: 'task [run]', hasToolResults: true, lastUserContains: 'exit code 0' }, reply: finish },
      // Failed, timed out or cut off by a crash: it may or may not have run.
      { match: { systemContains: 'task [run]', hasToolResults: true }, reply: guarded('run') },
      { match: { systemContains: 'task [run]', lastUserContains: 'attempted before' }, reply: guarded('run') },
      { match: { systemContains: 'task [run]' }, reply: command('run') },
      { match: { systemContains: 'task [write]', hasToolResults: true }, reply: finish },
      { match: { systemContains: 'task [write]' }, reply: tool('write_file', { path: 'notes.txt', content: 'notes\n' }) },
      ...Array.from({ length: turns }, (_, i) => ({ match: { lastUserContains: `: turn ${i + 1} go`, hasToolResults: false }, reply: command(`t${i + 1}`) })),
      ...Array.from({ length: canaries }, (_, i) => ({ match: { lastUserContains: canaryMessage(i + 1), hasToolResults: false }, reply: command(`c${i + 1}`) })),
      { match: { hasToolResults: true }, reply: { content: [{ type: 'text' as const, text: TURN_ANSWER }] } },
      { match: {}, reply: { content: [{ type: 'text' as const, text: 'Noted.' }] } },
    ],
  };
}
