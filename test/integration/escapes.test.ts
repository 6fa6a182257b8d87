// The escape suite, short, as the user CI runs it as (root): every route, 100 symlink
// swaps instead of 1,000, without the slowest attempts (`npm run escapes` runs the full
// size as root and as nobody, and commits its results). Pass: not one escape.
import { expect, it } from 'vitest';
import { pidsHeld } from '../../activities/tools/command-cgroup';
import { runEscapes } from '../escapes/suite';

it('no tool, command or MCP call reads or writes outside the workspace, holds a privilege, reaches the host network or touches .keel/', async () => {
  const report = await runEscapes({ swaps: 100, short: true });
  expect(report.routes.map((r) => r.evidence).flat()).toEqual([]);
  expect(report.totalEscapes).toBe(0);
  expect(report.routes.length).toBeGreaterThanOrEqual(14);
  expect(report.routes.every((r) => r.attempts > 0)).toBe(true);
  // Each limit the limits route tries ends its call with status `limit`, naming it.
  const limits = report.routes.find((r) => r.route.startsWith('limits'))?.limits;
  const forkBombHeld = await pidsHeld();
  expect(limits).toEqual({ ...(forkBombHeld ? { processes: 1 } : {}), memory: 1, 'tmp-space': 1, 'file-size': 1 });
}, 180_000);

it('sees escapes when there are some: with the sandbox off, commands get out', async () => {
  const report = await runEscapes({ swaps: 0, sandboxOff: true, short: true });
  const byRoute = Object.fromEntries(report.routes.map((r) => [r.route, r.escapes]));
  expect(byRoute['commands that read secrets outside']).toBeGreaterThan(0);
  expect(byRoute['commands that open a socket to 127.0.0.1']).toBeGreaterThan(0);
  expect(byRoute['.keel/ through every route']).toBeGreaterThan(0);
  expect(byRoute['network grant: allow-listed names that resolve to loopback, host ports, the Temporal port']).toBeGreaterThan(0);
  // Without the deny rule and the approval's binding, the program runs and the rewritten file does.
  expect(byRoute['deny rules against the spellings of the program they name']).toBeGreaterThan(0);
  expect(byRoute['approved workspace scripts rewritten before they run']).toBeGreaterThan(0);
  // The file tools and MCP checks do not depend on the command sandbox: every escape is a command's.
  const evidence = report.routes.flatMap((r) => r.evidence);
  expect(evidence.length).toBe(report.totalEscapes);
  expect(evidence.filter((e) => !e.startsWith('run_command '))).toEqual([]);
}, 180_000);
