// What a run hands the next must fit in one payload (the server refuses a continue-as-new
// input over 2 MB, and the workflow task then fails for ever): the session hands over only
// a queue that fits, and a goal's stored texts are bounded where they come in.
import { describe, expect, it } from 'vitest';
import { GOAL_TEXT_MAX, rejectPlanSchema, resolveTaskSchema } from '../../workflows/definitions';
import { handoverFits, HANDOVER_QUEUE_BYTES } from '../../workflows/handover-size';
import { goalOptionsSchema } from '../../workflows/protocol/goal';

describe('hand-over size', () => {
  it('a queue fits up to the limit in UTF-8 bytes, not characters', () => {
    expect(handoverFits(['a'.repeat(HANDOVER_QUEUE_BYTES)])).toBe(true);
    expect(handoverFits(['a'.repeat(HANDOVER_QUEUE_BYTES), 'b'])).toBe(false);
    // 'ü' is 2 bytes: half as many characters fill it.
    expect(handoverFits(['ü'.repeat(HANDOVER_QUEUE_BYTES / 2)])).toBe(true);
    expect(handoverFits(['ü'.repeat(HANDOVER_QUEUE_BYTES / 2 + 1)])).toBe(false);
    // An emoji is a surrogate pair: 4 bytes.
    expect(handoverFits(['😀'.repeat(HANDOVER_QUEUE_BYTES / 4)])).toBe(true);
    expect(handoverFits(['😀'.repeat(HANDOVER_QUEUE_BYTES / 4 + 1)])).toBe(false);
  });

  it("a goal's own texts are bounded where they come in, with the reason", () => {
    const long = 'x'.repeat(GOAL_TEXT_MAX + 1);
    const start = goalOptionsSchema.safeParse({ goal: long, workspace: '/tmp' });
    expect(start.success).toBe(false);
    expect(start.error?.issues[0]?.message).toMatch(/at most 100,000 characters/);
    expect(goalOptionsSchema.safeParse({ goal: 'x'.repeat(GOAL_TEXT_MAX), workspace: '/tmp' }).success).toBe(true);
    expect(rejectPlanSchema.safeParse(long).success).toBe(false);
    expect(rejectPlanSchema.safeParse({ feedback: long }).success).toBe(false);
    expect(resolveTaskSchema.safeParse({ taskId: 't1', action: 'edit', instructions: long }).success).toBe(false);
  });
});
