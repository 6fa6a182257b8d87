// The MCP stdio transport over a sandboxed process (spawnSandboxed): the SDK's own
// StdioClientTransport spawns its process itself and cannot hand bubblewrap the seccomp
// program or read the self-check's verdict, so this one does, and speaks the same
// newline-delimited JSON-RPC over the process's stdin and stdout.
import { type Readable, type Writable } from 'node:stream';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import { type Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { type SandboxedProcess } from '../tools/sandbox';

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
    return started.verdict.then((verdict) => {
      if (!verdict.ok) throw new Error(`the sandbox self-check failed (${verdict.reason}); the server did not run`);
    });
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
    const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
    await gone;
    clearTimeout(timer);
  }
}
