// When a sub-agent tells its parent (machines/sub-agent-reports.ts): approvals at once, commands
// and files now and then, its spend only when it ends cancelled.
import { describe, expect, it } from 'vitest';
import { ZERO_USAGE } from '../../../machines/budget';
import { EVIDENCE_EVERY_MS, reportMark, subAgentReportDue } from '../../../machines/sub-agent-reports';

const usage = (outputTokens: number) => ({ ...ZERO_USAGE, inputTokens: 100, outputTokens, costUsd: outputTokens / 1000 });
const mark = (o: { approvals?: string[]; commands?: string[]; files?: string[]; out?: number }) =>
  reportMark({ pendingApprovals: (o.approvals ?? []).map((callId) => ({ callId })), evidence: { commands: (o.commands ?? []).map((command) => ({ command })), filesChanged: o.files ?? [] }, usage: o.out === undefined ? ZERO_USAGE : usage(o.out) });
const start = { mark: mark({}), atMs: 1_000 };

describe('a sub-agent\'s reports', () => {
  it('are not sent for spend alone: a step that only spent tokens costs the parent nothing', () => {
    expect(subAgentReportDue(start, { mark: mark({ out: 50 }), atMs: 60_000 })).toBe(false);
  });

  it('are sent at once when its calls waiting for a human change (the parent\'s inbox)', () => {
    expect(subAgentReportDue(start, { mark: mark({ approvals: ['toolu_1'], out: 50 }), atMs: 1_001 })).toBe(true);
    const waiting = { mark: mark({ approvals: ['toolu_1'] }), atMs: 1_001 };
    expect(subAgentReportDue(waiting, { mark: mark({ approvals: [], out: 60 }), atMs: 1_002 })).toBe(true);
  });

  it('carry new commands and files no more often than every EVIDENCE_EVERY_MS', () => {
    const ran = mark({ commands: ['npm test'] });
    expect(subAgentReportDue(start, { mark: ran, atMs: start.atMs + EVIDENCE_EVERY_MS - 1 })).toBe(false);
    expect(subAgentReportDue(start, { mark: ran, atMs: start.atMs + EVIDENCE_EVERY_MS })).toBe(true);
    expect(subAgentReportDue(start, { mark: mark({ files: ['a.md'] }), atMs: start.atMs + EVIDENCE_EVERY_MS })).toBe(true);
    // The same command again is new evidence too (the last one differs in count).
    const sent = { mark: ran, atMs: 10_000 };
    expect(subAgentReportDue(sent, { mark: mark({ commands: ['npm test', 'npm test'] }), atMs: 10_000 + EVIDENCE_EVERY_MS })).toBe(true);
    expect(subAgentReportDue(sent, { mark: ran, atMs: 10_000 + EVIDENCE_EVERY_MS })).toBe(false);
  });

  it('when it ends cancelled, the last one goes out if the parent has not heard its spend', () => {
    expect(subAgentReportDue(start, { mark: mark({ out: 50 }), atMs: 1_001 }, true)).toBe(true);
    const heard = { mark: mark({ out: 50 }), atMs: 1_001 };
    expect(subAgentReportDue(heard, { mark: mark({ out: 50 }), atMs: 1_002 }, true)).toBe(false);
    expect(subAgentReportDue(heard, { mark: mark({ out: 50, commands: ['sleep 30'] }), atMs: 1_002 }, true)).toBe(true);
  });
});
