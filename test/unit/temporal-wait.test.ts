// A worker whose Temporal server is unreachable at start waits for it, one line a try,
// instead of exiting 1. Here the "server" is a real TCP listener that starts after two
// refused tries; the waits are shortened by the injected sleep, not the logic.
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { connectWaiting, TemporalUnreachableError, temporalWaitMs } from '../../worker/temporal-wait';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

const dial = (port: number) =>
  new Promise<net.Socket>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });

describe('connectWaiting', () => {
  it('tries again, one line a try, until the server answers', async () => {
    const port = await freePort();
    const lines: string[] = [];
    let server: net.Server | null = null;
    const socket = await connectWaiting({
      connect: () => dial(port),
      address: `127.0.0.1:${port}`,
      namespace: 'default',
      log: (line) => {
        lines.push(line);
        if (lines.length === 2) server = net.createServer((c) => c.end()).listen(port, '127.0.0.1');
      },
      sleep: () => new Promise((r) => setTimeout(r, 20)),
    });
    socket.destroy();
    (server as net.Server | null)?.close();
    expect(lines.length).toBeGreaterThanOrEqual(3);
    expect(lines[0]).toBe(`keel worker: waiting for Temporal at 127.0.0.1:${port} (namespace default), try 1: connect ECONNREFUSED 127.0.0.1:${port}; next try in 1 s`);
    expect(lines[1]).toMatch(/, try 2: connect ECONNREFUSED .*; next try in 2 s$/);
    expect(lines.at(-1)).toMatch(new RegExp(`^keel worker: Temporal at 127\\.0\\.0\\.1:${port} answered after \\d+ tries \\(\\d+ s\\)$`));
  });

  it('gives up at the horizon with the reason, and at once on what no retry fixes', async () => {
    const port = await freePort();
    let clock = 0;
    const gaveUp = await connectWaiting({ connect: () => dial(port), address: `x:${port}`, namespace: 'n', log: () => {}, horizonMs: 5_000, now: () => clock, sleep: async (ms) => void (clock += ms) }).catch((e: unknown) => e);
    expect(gaveUp).toBeInstanceOf(TemporalUnreachableError);
    expect((gaveUp as Error).message).toMatch(/^keel worker: cannot reach Temporal at x:\d+ \(namespace n\), still failing after 5 s \(the horizon is 5 s\): connect ECONNREFUSED/);
    let tries = 0;
    const tls = await connectWaiting({ connect: async () => { tries++; throw new Error('invalid peer certificate: UnknownIssuer'); }, address: 'x', namespace: 'n', log: () => {} }).catch((e: unknown) => e);
    expect((tls as Error).message).toBe('keel worker: cannot use Temporal at x (namespace n): invalid peer certificate: UnknownIssuer');
    expect(tries).toBe(1);
    expect(() => temporalWaitMs({ KEEL_TEMPORAL_WAIT_MS: 'soon' })).toThrow(/KEEL_TEMPORAL_WAIT_MS: expected milliseconds/);
    expect(temporalWaitMs({ KEEL_TEMPORAL_WAIT_MS: '0' })).toBe(0);
  });
});
