// The MCP stdio transport over a sandboxed process (spawnSandboxed): the SDK's own
// StdioClientTransport spawns its process itself and cannot hand bubblewrap the seccomp
// program or read the self-check's verdict, so this one does, and speaks the same
// newline-delimited JSON-RPC over the process's stdin and stdout.
import { type Readable, type Writable } from 'node:stream';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import { type Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { type SandboxedProcess } from '../tools/sandbox';

/** SIGTERM, then SIGKILL after this long; then at most CLOSE_AFTER_KILL_MS more for the pipes to close. */
const CLOSE_GRACE_MS = 2_000;
const CLOSE_AFTER_KILL_MS = 3_000;

export class SandboxedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private readonly buffer = new ReadBuffer();
  private process: SandboxedProcess | undefined;
  private closed = false;

  constructor(
    private readonly launch: () => SandboxedProcess,
    private readonly onStderr: (chunk: Buffer) => void,
    /** How long the sandbox's self-check may take to give its verdict before the start fails. */
    private readonly verdictTimeoutMs = 30_000,
  ) {}

  get pid(): number | null {
    return this.process?.child.pid ?? null;
  }

  /** Starts the process; rejects when the sandbox's self-check fails (the server never ran). */
  start(): Promise<void> {
    if (this.process) return Promise.reject(new Error('SandboxedStdioTransport already started'));
    const started = this.launch();
    this.process = started;
    const { child } = started;
    (child.stderr as Readable).on('data', this.onStderr);
    (child.stdout as Readable).on('data', (chunk: Buffer) => {
      this.buffer.append(chunk);
      for (;;) {
        let message: JSONRPCMessage | null;
        try {
          message = this.buffer.readMessage();
        } catch (error) {
          this.onerror?.(error as Error);
          continue;
        }
        if (message === null) break;
        this.onmessage?.(message);
      }
    });
    child.on('error', (error) => this.onerror?.(error));
    child.on('close', () => {
      this.closed = true;
      this.buffer.clear();
      this.onclose?.();
    });
    (child.stdin as Writable).on('error', (error) => this.onerror?.(error));
    // Bounded: a verdict that never comes (a sandbox stuck before the server runs) fails the
    // start with a reason instead of leaving the client, and everyone waiting on it, hanging.
    let timer: NodeJS.Timeout | undefined;
    const silent = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`the sandbox self-check gave no verdict within ${this.verdictTimeoutMs} ms; the server did not run`));
      }, this.verdictTimeoutMs);
    });
    return Promise.race([started.verdict, silent])
      .then((verdict) => {
        if (!verdict.ok) throw new Error(`the sandbox self-check failed (${verdict.reason}); the server did not run`);
      })
      .finally(() => clearTimeout(timer));
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.process?.child.stdin;
    if (!stdin || this.closed) return Promise.reject(new Error('not connected'));
    return new Promise((resolve) => {
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
    });
  }

  async close(): Promise<void> {
    const child = this.process?.child;
    if (!child || this.closed) return;
    const gone = new Promise<void>((resolve) => child.once('close', () => resolve()));
    child.stdin?.end();
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), CLOSE_GRACE_MS);
    // Bounded too: after SIGKILL the sandbox's PID namespace is gone with it; if its pipes
    // are somehow still held, the close does not wait for them forever.
    let giveUp: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (giveUp = setTimeout(resolve, CLOSE_GRACE_MS + CLOSE_AFTER_KILL_MS)));
    await Promise.race([gone, late]);
    clearTimeout(timer);
    clearTimeout(giveUp);
  }
}
