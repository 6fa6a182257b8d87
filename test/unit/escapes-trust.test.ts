// The trust probes of the escape suite (test/escapes/trust.ts), as CI runs them (as root):
// a nested policy file, .git and files that run later, symlinked workspaces, forged
// approvers, plaintext and bare signals. Each route also checks its honest form still works
// (else the suite throws). `npm run escapes` runs them as root and as nobody.
import { expect, it } from 'vitest';
import { runTrustProbes } from '../escapes/trust';

it('no nested policy widens a later session, .git stays as it was, no workspace resolves outside the root, no forged approver or plaintext signal is accepted', async () => {
  const routes = await runTrustProbes();
  expect(routes.flatMap((r) => r.evidence)).toEqual([]);
  expect(routes.map((r) => r.escapes)).toEqual([0, 0, 0, 0, 0]);
  expect(routes.every((r) => r.attempts >= 9)).toBe(true);
}, 120_000);
