// Runs before every integration and e2e file (vitest `setupFiles`): turns off the Temporal SDK's
// workflow stack-trace hook in the test fork (bench/no-stack-trace-hook.cjs, the one switch the
// bench uses too).
//
// In the SDK's debugMode — the tests' in-process workers run workflows on the fork's own thread
// (`workflowsOnCallingThread`) — the hook is the whole fork's: every promise workflow code makes
// captures a stack mapped through the bundle's source map, and every other promise (test code,
// clients, gRPC) compiles a `Function` to find out it is not in a workflow. No test asks for a
// stack trace, and nothing a workflow does depends on the hook (its only reader is that query),
// so the forks go without it. Measured alone on 2 cores: session-long.test.ts 27.6 → 15.9 s
// (its CPU −37 %), goal.test.ts −32 %, goal-control.test.ts −22 %. This runs before each file's
// first worker; files share their fork (isolate: false), and the switch stays set.
// Workers in processes of their own (compiled workers, `keel worker`) keep the hook.
import { createRequire } from 'node:module';

createRequire(import.meta.url)('../../bench/no-stack-trace-hook.cjs');
