// The conformance corpus (test/conformance/) must cover every stop_reason the installed
// SDK's types define: when an SDK upgrade adds one, this fails until a transcript for it
// is recorded and Keel's handling of it is decided.
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { STOP_REASONS } from '../../standin/scenario';
import { sdkStopReasons, stopReasonsIn, TRANSCRIPTS } from '../conformance/replay-server';

describe('conformance corpus', () => {
  const sdk = sdkStopReasons();

  it('reads the stop reasons from the SDK declarations', () => {
    expect(sdk).toContain('end_turn');
    expect(sdk).toContain('refusal');
  });

  it('has a transcript for every stop_reason in the SDK types', () => {
    const covered = stopReasonsIn(readdirSync(TRANSCRIPTS).filter((f) => f.endsWith('.sse')));
    expect(sdk.filter((reason) => !covered.has(reason))).toEqual([]);
  });

  it('lets the stand-in script every stop_reason in the SDK types, and no other', () => {
    expect([...STOP_REASONS].sort()).toEqual([...sdk].sort());
  });
});
