// Workspace affinity's pure parts: the host name a worker and a session agree on, the
// queue it becomes, the options a routed call gets, and the one failure that means the
// host is gone (a call no worker took in time: it never ran).
import { ActivityFailure, ApplicationFailure, RetryState, TimeoutFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { workspaceHostOf } from '../../worker/workspace-host';
import { resolveSessionOptions } from '../../workflows/session-options';
import { sessionOptionsSchema } from '../../workflows/protocol/session';
import { routed, workspaceHostGone, workspaceQueue, workspaceRoute } from '../../workflows/workspace-host';

const activityFailure = (cause: Error) => new ActivityFailure('activity failed', 'runTool', '7', RetryState.NON_RETRYABLE_FAILURE, 'keel@host-a', cause);

describe('workspace hosts', () => {
  it('a worker takes KEEL_WORKSPACE_HOST as a name a task queue can carry, or refuses it in one line', () => {
    expect(workspaceHostOf({})).toBeNull();
    expect(workspaceHostOf({ KEEL_WORKSPACE_HOST: '  ' })).toBeNull();
    expect(workspaceHostOf({ KEEL_WORKSPACE_HOST: 'build-1.eu_west' })).toBe('build-1.eu_west');
    for (const bad of ['a b', '-a', 'a@b', 'a/b', 'x'.repeat(64)]) {
      expect(() => workspaceHostOf({ KEEL_WORKSPACE_HOST: bad })).toThrow(/^KEEL_WORKSPACE_HOST=".*": a host name of letters, digits/);
    }
  });

  it('a session names its host in its start input, checked like the worker does', () => {
    expect(sessionOptionsSchema.safeParse({ workspace: '/w', workspaceHost: 'build-1', workspaceHostWaitMs: 5000 }).success).toBe(true);
    const bad = sessionOptionsSchema.safeParse({ workspace: '/w', workspaceHost: 'a@b' });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.path).toEqual(['workspaceHost']);
    expect(sessionOptionsSchema.safeParse({ workspace: '/w', workspaceHostWaitMs: 0 }).success).toBe(false);
  });

  it("routes a run's workspace calls to the host's queue, with a bounded wait; a shared workspace changes nothing", () => {
    expect(workspaceQueue('keel', 'build-1')).toBe('keel@build-1');
    expect(workspaceRoute('keel', undefined, 5000)).toBeNull();
    expect(routed(null)).toEqual({});
    // The wait a session resolves to when its options name none (workflows/session-options.ts).
    const route = workspaceRoute('keel', 'build-1', resolveSessionOptions({ workspace: '/w', workspaceHost: 'build-1' }).workspaceHostWaitMs)!;
    expect(route).toEqual({ host: 'build-1', taskQueue: 'keel@build-1', waitMs: 60_000 });
    expect(routed(route)).toEqual({ taskQueue: 'keel@build-1', scheduleToStartTimeout: 60_000 });
  });

  it('only a call no worker took in time means the host is gone', () => {
    const route = workspaceRoute('keel', 'build-1', 3_000);
    const notTaken = activityFailure(new TimeoutFailure('timeout', undefined, 'SCHEDULE_TO_START'));
    expect(workspaceHostGone(notTaken, route)).toBe(
      'workspace host "build-1" is not polling task queue "keel@build-1": no worker there took the call within 3 s, so it did not run. The workspace is on that host\'s disk only; start a worker there with KEEL_WORKSPACE_HOST=build-1.',
    );
    // A call that started and then timed out may have run: not this message.
    expect(workspaceHostGone(activityFailure(new TimeoutFailure('timeout', undefined, 'HEARTBEAT')), route)).toBeNull();
    expect(workspaceHostGone(activityFailure(new TimeoutFailure('timeout', undefined, 'START_TO_CLOSE')), route)).toBeNull();
    expect(workspaceHostGone(activityFailure(ApplicationFailure.create({ message: 'ENOENT' })), route)).toBeNull();
    expect(workspaceHostGone(notTaken, null)).toBeNull();
  });
});
