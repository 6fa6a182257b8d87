// Models are checked against the capability table when a run starts (machines/models.ts
// modelRequestIssues, called by KeelClient before anything starts; the HTTP API answers 400):
// a thinking mode the model does not take, or an output limit above its largest, was accepted
// and failed at the first model call.
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../client/errors';
import { modelRequestIssues } from '../../machines/models';
import { toProblem } from '../../server/app';

describe('modelRequestIssues', () => {
  it('refuses what the table says the model does not take, naming the option', () => {
    expect(modelRequestIssues('claude-opus-5', { thinking: { budgetTokens: 2048 } })).toEqual(['thinking: claude-opus-5 takes no thinking budget (adaptive only): use { adaptive: true }']);
    expect(modelRequestIssues('claude-sonnet-4-0', { thinking: { adaptive: true } })).toEqual(['thinking: claude-sonnet-4-0 does not take adaptive thinking: give budgetTokens']);
    expect(modelRequestIssues('claude-3-5-haiku', { maxTokens: 16_000 })).toEqual(["maxTokens: 16000 is above claude-3-5-haiku's largest max_tokens, 8192"]);
    // An alias and a dated snapshot are the same model.
    expect(modelRequestIssues('claude-sonnet-4-20250514', { maxTokens: 70_000 })).toHaveLength(1);
  });

  it('accepts what the model takes, and leaves a model it does not know to the worker', () => {
    expect(modelRequestIssues('claude-sonnet-4-6', { maxTokens: 64_000, thinking: { budgetTokens: 4096 } })).toEqual([]);
    expect(modelRequestIssues('claude-opus-5', { thinking: { adaptive: true } })).toEqual([]);
    expect(modelRequestIssues('my-fine-tune', { maxTokens: 1_000_000, thinking: { adaptive: true } })).toEqual([]);
  });

  it('is a 400 naming the field over HTTP (an InvalidInputError was a 500)', () => {
    const p = toProblem(new InvalidInputError('startSession', ['maxTokens: 16000 is above claude-3-5-haiku\'s largest max_tokens, 8192']));
    expect(p.status).toBe(400);
    expect(p.toProblem().errors).toEqual([{ pointer: '/body/maxTokens', message: "maxTokens: 16000 is above claude-3-5-haiku's largest max_tokens, 8192" }]);
  });
});
