// The infrastructure table: what is waited out and what a human decides, and how long the
// waits are. A store outage used to end a turn at once (store errors were non-retryable).
import { describe, expect, it } from 'vitest';
import { classifyInfraError, describeInfraWait, INFRA_WAIT, infraWaitDecision, infraWaitingKey } from '../../../machines/infra-retry';
import { createSession, sessionMachine, type SessionEvent, type SessionState } from '../../../machines/index';

describe('classifyInfraError', () => {
  it('waits out what comes back by itself: refused, reset, timed out, a restarting or full database, a host away', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', '57P01 admin_shutdown', '57P03 cannot_connect_now', '53300 too_many_connections', '08006', 'schedule_to_start']) {
      expect(classifyInfraError(code).verdict, code).toBe('transient');
    }
    expect(classifyInfraError(null, 'Connection terminated unexpectedly').verdict).toBe('transient');
    expect(classifyInfraError(null, 'timeout exceeded when trying to connect').verdict).toBe('transient');
    expect(classifyInfraError(null, 'FATAL: the database system is starting up').verdict).toBe('transient');
  });

  it('shows a human what fails the same way again: permissions, a foreign store, a missing database, the unknown', () => {
    for (const code of ['EACCES', 'EPERM', 'EROFS', '42501 insufficient_privilege', '28P01 invalid_password', '3D000 invalid_catalog_name', 'foreign', 'workspace_gone', 'ENOSPC', 'EWHATEVER']) {
      expect(classifyInfraError(code).verdict, code).toBe('permanent');
    }
    expect(classifyInfraError(null, 'something nobody has seen').verdict).toBe('permanent');
  });
});

describe('infraWaitDecision', () => {
  it('backs off up to a minute between tries, for hours, then gives up with the reason', () => {
    const since = 1_000_000;
    expect(infraWaitDecision({ tries: 1, since, now: since })).toEqual({ wait: true, delayMs: INFRA_WAIT.backoffMs[0] });
    expect(infraWaitDecision({ tries: 50, since, now: since + 60_000 })).toEqual({ wait: true, delayMs: 60_000 });
    expect(INFRA_WAIT.horizonMs).toBeGreaterThanOrEqual(60 * 60 * 1000);
    const late = infraWaitDecision({ tries: 400, since, now: since + INFRA_WAIT.horizonMs });
    expect(late.wait).toBe(false);
    expect(!late.wait && late.reason).toMatch(/^still failing after 6 h \(the horizon is 6 h\)$/);
    // Never past the horizon: the last wait is cut to it.
    expect(infraWaitDecision({ tries: 9, since, now: since + 10_000, horizonMs: 15_000 })).toEqual({ wait: true, delayMs: 5_000 });
  });

  it('says what it waits for, since when, how many tries', () => {
    const since = Date.UTC(2026, 0, 1, 12, 3, 7);
    expect(describeInfraWait({ service: 'conversation store', target: 'postgres postgres://keel@db:5432/keel', since, tries: 14, error: 'connect ECONNREFUSED' })).toBe(
      'waiting for the conversation store (postgres postgres://keel@db:5432/keel) since 12:03:07 UTC, 14 tries: connect ECONNREFUSED',
    );
    expect(describeInfraWait({ service: 'workspace host', target: 'host-b', since, tries: 1, error: 'not polling' })).toMatch(/^waiting for workspace host "host-b" since 12:03:07 UTC, 1 try: /);
  });

  it('names what it waits for in one stable word an operator queries KeelWaiting by', () => {
    expect(infraWaitingKey({ service: 'conversation store', target: 'postgres postgres://keel@db:5432/keel' })).toBe('conversation-store');
    expect(infraWaitingKey({ service: 'workspace host', target: 'host-b' })).toBe('host:host-b');
    expect(infraWaitingKey({ service: 'temporal', target: 'a worker of this task queue' })).toBe('temporal');
    expect(infraWaitingKey({ service: 'file system', target: '/w' })).toBe('file-system');
    expect(infraWaitingKey(null)).toBeNull();
  });
});

describe('a session whose setup failed for good', () => {
  const send = (state: SessionState, event: SessionEvent) => sessionMachine.transition(state, event);
  it('is suspended with the reason (not failed), refuses resume, and restart sets it up again', () => {
    const created = createSession({ sessionId: 's1', at: 0 });
    const failed = send(created.state, { type: 'init_failed', error: 'policy file .keel/policy.json: not JSON', suspend: true });
    if (!failed.ok) throw new Error(failed.error.message);
    expect(failed.state).toMatchObject({ status: 'suspended', reason: 'setup', error: 'policy file .keel/policy.json: not JSON' });
    expect(failed.directives.some((d) => d.type === 'complete')).toBe(false);
    const resumed = send(failed.state, { type: 'resume' });
    expect(!resumed.ok && resumed.error.message).toMatch(/setup failed \(policy file .*\): restart it once that is fixed/);
    // A message sent meanwhile is kept for when it runs.
    const queued = send(failed.state, { type: 'user_message', messageId: 'm1', text: 'hello' });
    if (!queued.ok) throw new Error(queued.error.message);
    const restarted = send(queued.state, { type: 'restart' });
    if (!restarted.ok) throw new Error(restarted.error.message);
    expect(restarted.state.status).toBe('initializing');
    expect(restarted.directives.some((d) => d.type === 'initialize')).toBe(true);
    // Without `suspend` (runs recorded before), it fails as it did.
    const old = send(created.state, { type: 'init_failed', error: 'x' });
    expect(old.ok && old.state.status).toBe('failed');
  });
});
