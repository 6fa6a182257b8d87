// The escape suite, short: every route, 100 symlink swaps instead of 1,000 (`npm run
// escapes` runs the full size and commits its results). Pass: not one escape.
import { expect, it } from 'vitest';
import { runEscapes } from '../escapes/suite';

it('no tool, command or MCP call reads or writes outside the workspace, or touches .keel/', async () => {
  const report = await runEscapes({ swaps: 100 });
  expect(report.routes.map((r) => r.evidence).flat()).toEqual([]);
  expect(report.totalEscapes).toBe(0);
  expect(report.routes.length).toBeGreaterThanOrEqual(10);
  expect(report.routes.every((r) => r.attempts > 0)).toBe(true);
}, 120_000);

it('sees escapes when there are some: with the sandbox off, commands get out', async () => {
  const report = await runEscapes({ swaps: 0, sandboxOff: true });
  const byRoute = Object.fromEntries(report.routes.map((r) => [r.route, r.escapes]));
  expect(byRoute['commands that read secrets outside']).toBeGreaterThan(0);
  expect(byRoute['commands that open a socket to 127.0.0.1']).toBeGreaterThan(0);
  expect(byRoute['.keel/ through every route']).toBeGreaterThan(0);
  // The file tools and MCP checks do not depend on the sandbox: every escape is a command's.
  const evidence = report.routes.flatMap((r) => r.evidence);
  expect(evidence.length).toBe(report.totalEscapes);
  expect(evidence.filter((e) => !e.startsWith('run_command '))).toEqual([]);
}, 120_000);
