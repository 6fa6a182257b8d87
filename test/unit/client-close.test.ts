// KeelClient.close() while a call is being retried: the Temporal client's gRPC retry fires
// from a timer, and on a closed channel that timer threw "Channel has been shut down",
// uncaught (`npm run demo` exited 1 instead of 143 on SIGTERM). A fake Temporal frontend
// answers every DescribeWorkflowExecution UNAVAILABLE (retryable); the client is closed
// while a retry's backoff timer runs. Fails before client/grpc-retry.ts: the uncaught
// exception, and a call that never settles.
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { KeelClient } from '../../client/keel-client';

const DESCRIBE = '/temporal.api.workflowservice.v1.WorkflowService/DescribeWorkflowExecution';
const same = (b: Buffer) => b;
let server: grpc.Server;
let address: string;
let attempts = 0;
let onAttempt: (() => void) | null = null;

beforeAll(async () => {
  server = new grpc.Server();
  // GetSystemInfo (the connect check) is UNIMPLEMENTED here, which the SDK accepts.
  server.addService(
    { describe: { path: DESCRIBE, requestStream: false, responseStream: false, requestSerialize: same, requestDeserialize: same, responseSerialize: same, responseDeserialize: same } },
    {
      describe: (_call: unknown, callback: (error: grpc.ServiceError | null) => void) => {
        attempts++;
        callback(Object.assign(new Error('frontend unavailable'), { code: grpc.status.UNAVAILABLE, details: 'frontend unavailable', metadata: new grpc.Metadata() }));
        onAttempt?.();
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
  address = `127.0.0.1:${port}`;
});

afterAll(() => server.forceShutdown());

it('close() while a call waits to be retried: the call fails to its caller, nothing is thrown from a timer', async () => {
  const uncaught: unknown[] = [];
  let thrownFromTimer: (error: unknown) => void = () => undefined;
  const thrown = new Promise<never>((_, reject) => (thrownFromTimer = reject));
  const record = (error: unknown) => {
    uncaught.push(error);
    thrownFromTimer(error);
  };
  process.on('uncaughtException', record);
  try {
    const keel = await KeelClient.connect({ address, namespace: 'default', env: {} });
    const secondAttempt = new Promise<void>((resolve) => (onAttempt = () => attempts === 2 && resolve()));
    const call = keel.kindOf('goal-x').then(
      () => null,
      (error: unknown) => error,
    );
    // The second attempt proves the call is in the SDK's retry loop; its UNAVAILABLE comes
    // back in a millisecond or two and schedules the third attempt ≥ 230 ms later
    // (100 ms × 1.7² − 20 % jitter). 50 ms for that answer's trip: the close lands inside the backoff.
    await secondAttempt;
    await new Promise((r) => setTimeout(r, 50));
    await keel.close();
    // Before the fix: "Channel has been shut down", thrown from the retry's timer, and a call that never settles.
    const error = await Promise.race([call, thrown]);
    expect(error).toBeInstanceOf(Error);
    expect(String((error as Error).message) + String((error as { cause?: Error }).cause?.message)).toMatch(/unavailable/i);
    // The retry already scheduled started before the channel closed (it fails as "Channel
    // closed before call started", UNAVAILABLE), and none was scheduled after it.
    expect(attempts).toBeGreaterThanOrEqual(2);
    // A retry firing on the closed channel would throw here, after the close.
    await new Promise((r) => setTimeout(r, 600));
    expect(uncaught).toEqual([]);
  } finally {
    process.off('uncaughtException', record);
  }
});
