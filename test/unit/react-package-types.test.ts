// @keel/react declares the API's shapes itself (its declarations must not pull the server's
// modules into a front end). This file holds them to the server's: each server type must be
// assignable to the package's twin, and each request the package sends must be a valid input
// of the route's zod schema. `npm run typecheck` compiles it, so a server change that would
// break a front end fails there; the test below runs the same checks on values at run time.
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import type * as Http from '../../packages/react/src/http/types';
import { approveBody, denyBody, startSessionBody, type inboxItemSchema, type listEntrySchema, type startGoalBody } from '../../server/schemas';
import type { GoalStateView, PendingApproval, PlanView, StateView, TranscriptPage } from '../../workflows/definitions';
import type { Task } from '../../machines/task-graph';

describe('@keel/react types follow the server', () => {
  it('every server view is assignable to the package type a front end reads', () => {
    expectTypeOf<PendingApproval>().toExtend<Http.PendingApproval>();
    expectTypeOf<StateView>().toExtend<Http.SessionState>();
    expectTypeOf<TranscriptPage>().toExtend<Http.TranscriptPage>();
    expectTypeOf<GoalStateView>().toExtend<Http.GoalState>();
    expectTypeOf<PlanView>().toExtend<Http.GoalView['plan']>();
    expectTypeOf<Task>().toExtend<Http.Task>();
    expectTypeOf<z.infer<typeof inboxItemSchema>>().toExtend<Http.InboxItem>();
    expectTypeOf<z.infer<typeof listEntrySchema>>().toExtend<Http.ListEntry>();
  });

  it('every request body the package sends is what its route accepts', () => {
    expectTypeOf<Http.StartSessionRequest>().toExtend<z.input<typeof startSessionBody>>();
    expectTypeOf<Http.StartGoalRequest>().toExtend<z.input<typeof startGoalBody>>();
    expectTypeOf<Http.ApproveRequest>().toExtend<z.input<typeof approveBody>>();
    expectTypeOf<Http.DenyRequest>().toExtend<z.input<typeof denyBody>>();
    const approve: Http.ApproveRequest = { callId: 'toolu_1', scope: 'session', rule: 'run_command(npm test*)' };
    const start: Http.StartSessionRequest = { mode: 'ask', workspace: 'app', createWorkspace: true };
    expect(approveBody.safeParse(approve).success).toBe(true);
    expect(startSessionBody.safeParse(start).success).toBe(true);
    expect(denyBody.safeParse({ callId: 'toolu_1', reason: 'no' } satisfies Http.DenyRequest).success).toBe(true);
  });
});
