// The one model table: every model Keel accepts is priced and has limits, under every id a
// request or a response may name it by (alias, canonical id, dated snapshot).
import { describe, expect, it } from 'vitest';
import { billedPrice, costOf, DEFAULT_PRICES, priceOf } from '../../activities/llm-pricing';
import { contextWindowTokens, forcesToolChoice, isKnownModel, KNOWN_MODELS, maxOutputTokens, thinkingModes, toolChoiceFor } from '../../machines/model-limits';
import { canonicalModel, MODEL_TABLE_SOURCE, MODELS, modelSpec } from '../../machines/models';
import { answeredAs } from '../../standin/server';

describe('the model table', () => {
  it('prices and limits every model Keel accepts, under each of its ids, and names its source date', () => {
    expect(MODEL_TABLE_SOURCE.checked).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(KNOWN_MODELS.length).toBeGreaterThan(Object.keys(MODELS).length);
    for (const id of KNOWN_MODELS) {
      expect(isKnownModel(id), id).toBe(true);
      const spec = modelSpec(id);
      expect(spec, id).not.toBeNull();
      expect(priceOf(id, DEFAULT_PRICES), id).not.toBeNull();
      expect(spec!.contextWindow, id).toBeGreaterThanOrEqual(200_000);
      expect(spec!.maxOutput, id).toBeGreaterThan(0);
      expect(spec!.maxOutput, id).toBeLessThan(spec!.contextWindow);
      // What the stand-in answers an alias with is a known, priced id of the same model.
      const answered = answeredAs(id);
      expect(canonicalModel(answered), `${id} → ${answered}`).toBe(canonicalModel(id));
      expect(priceOf(answered, DEFAULT_PRICES), answered).toBe(priceOf(id, DEFAULT_PRICES));
    }
  });

  it('resolves aliases and dated snapshots to one model (claude-sonnet-4-0 is billed as claude-sonnet-4-20250514)', () => {
    for (const id of ['claude-sonnet-4-0', 'claude-sonnet-4', 'claude-sonnet-4-20250514']) expect(canonicalModel(id)).toBe('claude-sonnet-4-0');
    for (const id of ['claude-opus-4-0', 'claude-opus-4', 'claude-opus-4-20250514']) expect(canonicalModel(id)).toBe('claude-opus-4-0');
    expect(answeredAs('claude-sonnet-4-0')).toBe('claude-sonnet-4-20250514');
    expect(answeredAs('claude-opus-4-1')).toBe('claude-opus-4-1-20250805');
    // Dateless models (the 4.6 generation on) answer with their own id.
    expect(answeredAs('claude-sonnet-4-6')).toBe('claude-sonnet-4-6');
    const usage = { input_tokens: 1_000_000, output_tokens: 0 };
    expect(costOf('claude-sonnet-4-20250514', usage, DEFAULT_PRICES)?.total).toBe(3);
    expect(costOf('claude-opus-4-20250514', usage, DEFAULT_PRICES)?.total).toBe(15);
    // A dateless model has no snapshots to add a date to.
    expect(canonicalModel('claude-sonnet-4-6-20260101')).toBeNull();
    expect(canonicalModel('claude-unreleased-9')).toBeNull();
  });

  it('bills a response at the billed id\'s price, else the requested model\'s', () => {
    expect(billedPrice('claude-sonnet-4-0', 'claude-sonnet-4-20250514', DEFAULT_PRICES)).toBe(DEFAULT_PRICES['claude-sonnet-4-0']);
    // An id the table does not spell is priced as what was asked for, never as free.
    expect(billedPrice('claude-sonnet-5', 'claude-sonnet-5-20260630', DEFAULT_PRICES)).toBe(DEFAULT_PRICES['claude-sonnet-5']);
    // A response from another priced model is billed as that model.
    expect(billedPrice('claude-sonnet-4-6', 'claude-opus-4-1-20250805', DEFAULT_PRICES)).toBe(DEFAULT_PRICES['claude-opus-4-1']);
    expect(billedPrice('claude-unreleased-9', 'claude-unreleased-9', DEFAULT_PRICES)).toBeNull();
  });

  it('carries the limits of the newer families, as the docs give them', () => {
    expect(maxOutputTokens('claude-opus-4-1-20250805')).toBe(32_000);
    expect(maxOutputTokens('claude-sonnet-5')).toBe(128_000);
    expect(contextWindowTokens('claude-opus-4-8')).toBe(1_000_000);
    expect(contextWindowTokens('claude-sonnet-4-5-20250929')).toBe(200_000);
    expect(thinkingModes('claude-fable-5-1')).toEqual({ manual: false, adaptive: true });
    expect(thinkingModes('claude-sonnet-4-5')).toEqual({ manual: true, adaptive: false });
    expect(forcesToolChoice('claude-fable-5')).toBe(false);
    expect(forcesToolChoice('claude-sonnet-4-6')).toBe(true);
  });
});

describe('forced tool choice', () => {
  it('is asked for only where the model takes it: the planner and critic fall back to auto elsewhere', () => {
    expect(toolChoiceFor('claude-sonnet-4-6', 'submit_plan')).toEqual({ type: 'tool', name: 'submit_plan' });
    expect(toolChoiceFor('claude-fable-5-1', 'submit_plan')).toEqual({ type: 'auto' });
    expect(toolChoiceFor('claude-opus-5', 'submit_review')).toEqual({ type: 'auto' });
  });
});
