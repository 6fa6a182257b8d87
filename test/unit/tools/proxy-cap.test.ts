// The egress proxy's connection caps: one command (one grant) holds at most its cap of
// open connections, all grants of a worker together at most the worker's; what is over is
// closed at once and reported, and the proxy keeps serving the others.
import net from 'node:net';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CAP_RECORD_HOST, openProxyConnections, setWorkerConnectionCap, startEgressProxy, type ConnectionRecord, type EgressProxy } from '../../../activities/tools/network-proxy';
import { executeTool } from '../../../activities/tools/run-tool';
import { makeWorkspace, matching } from './context';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function proxy(maxConnections?: number): Promise<{ socket: string; records: ConnectionRecord[]; proxy: EgressProxy }> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-proxy-cap-'));
  const records: ConnectionRecord[] = [];
  const socket = path.join(dir, 'proxy.sock');
  const started = await startEgressProxy({ socketPath: socket, forbidden: [], onConnection: (r) => records.push(r), ...(maxConnections ? { maxConnections } : {}) });
  cleanups.push(async () => {
    await started.close();
    await fs.rm(dir, { recursive: true, force: true });
  });
  return { socket, records, proxy: started };
}

/** Opens `count` connections and answers how many the proxy kept open (the rest it closed). */
async function flood(socket: string, count: number): Promise<net.Socket[]> {
  const sockets = await Promise.all(
    Array.from({ length: count }, () => new Promise<net.Socket>((resolve) => {
      const s = net.connect(socket);
      s.on('error', () => undefined);
      s.once('connect', () => resolve(s));
      s.once('close', () => resolve(s));
    })),
  );
  cleanups.push(async () => {
    for (const s of sockets) s.destroy();
  });
  // A refused connection is closed by the proxy as soon as it is accepted: wait until every one has settled.
  const settled = (s: net.Socket) => s.destroyed || s.readyState !== 'opening';
  for (let i = 0; i < 200 && !sockets.every(settled); i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
  await roundTrip(sockets);
  return sockets.filter((s) => !s.destroyed);
}

/** A request on each still-open socket proves it is served (the proxy answers 400 to garbage). */
async function roundTrip(sockets: net.Socket[]): Promise<void> {
  await Promise.all(sockets.filter((s) => !s.destroyed).map((s) => new Promise<void>((resolve) => {
    s.once('close', () => resolve());
    s.once('data', () => resolve());
    s.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n');
  })));
}

describe('egress proxy connection caps', () => {
  it('a grant holds at most its cap of open connections; the rest are closed at once and reported once', async () => {
    const { socket, records } = await proxy(5);
    const open = await flood(socket, 40);
    expect(open.length).toBeLessThanOrEqual(5);
    const capRecords = records.filter((r) => r.host === CAP_RECORD_HOST);
    expect(capRecords).toEqual([{ host: CAP_RECORD_HOST, port: 0, decision: 'refused', reason: matching(/^connection cap: 5 open connections for this command/) }]);
    // Closing some makes room again.
    for (const s of open) s.destroy();
    for (let i = 0; i < 200 && openProxyConnections() > 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    expect((await flood(socket, 3)).length).toBe(3);
  });

  it("all grants of a worker together hold at most the worker's cap; another grant is refused, not the worker", async () => {
    const previous = setWorkerConnectionCap(8);
    cleanups.push(async () => void setWorkerConnectionCap(previous));
    const a = await proxy(100);
    const b = await proxy(100);
    expect((await flood(a.socket, 30)).length).toBe(8);
    expect(await flood(b.socket, 5)).toHaveLength(0);
    expect(b.records).toContainEqual({ host: CAP_RECORD_HOST, port: 0, decision: 'refused', reason: matching(/^connection cap: 8 open connections through the worker's proxies/) });
  });

  it('a sandboxed command flooding the proxy socket: the proxy holds its cap, the refusal is tool progress, the worker keeps serving', async () => {
    const t = await makeWorkspace();
    cleanups.push(() => t.cleanup());
    const script = `const net=require("net");let open=0;for(let i=0;i<3000;i++){const s=net.connect("/run/keel-net/proxy.sock");s.on("error",()=>{});s.on("connect",()=>{open++;s.on("close",()=>open--)})}setTimeout(()=>{console.log("HELD",open);process.exit(0)},3000)`;
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, openProxyConnections())), 5);
    const result = await executeTool(t.ctx({ sandbox: { level: 'workspace-write', network: true } }), 'run_command', { command: ['node', '-e', script], timeout_seconds: 60 });
    clearInterval(sampler);
    const held = Number(/HELD (\d+)/.exec(result.content)?.[1] ?? 'NaN');
    expect(held).toBeLessThanOrEqual(128);
    expect(peak).toBeLessThanOrEqual(128);
    expect(t.progress).toContainEqual({ tool: 'run_command', network: { host: CAP_RECORD_HOST, port: 0, decision: 'refused', reason: matching(/^connection cap: 128 open connections for this command/) } });
  });
});

describe('the proxy judges every spelling of an address as the address', () => {
  const loopbackAndPrivate = [
    '127.0.0.1', '::1', '0:0:0:0:0:0:0:1', '::0001', '[::1]', '::7f00:1', '::127.0.0.1', '::ffff:7f00:1', '::ffff:127.0.0.1', '::ffff:0:7f00:1', '::ffff:0:127.0.0.1',
    '64:ff9b::7f00:1', '64:ff9b::127.0.0.1', '64:ff9b:1::a00:1', '2002:7f00:1::1', '2002:a9fe:a9fe::', '::a00:1', '::ffff:a9fe:a9fe', '::ffff:c0a8:1', 'fe80::1', 'fc00::1', 'fd12::1', '::',
    '0x7f000001', '2130706433', '0177.0.0.1', '0177.1', '127.1', '0x7f.1', '0', '0x0a.0.0.1', '012.0.0.1', '167772161', '0xa9fea9fe', '3232235521',
  ];
  it.each(loopbackAndPrivate)('%s is refused, whatever the allow-list', async (host) => {
    const { socket, records } = await proxy();
    const answer = await new Promise<string>((resolve) => {
      const s = net.connect(socket);
      let text = '';
      s.on('data', (d: Buffer) => (text += d.toString('utf8')));
      s.on('close', () => resolve(text));
      s.on('error', () => resolve(text));
      s.write(`CONNECT ${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:80 HTTP/1.1\r\nhost: x\r\n\r\n`);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 403/);
    expect(records).toContainEqual(expect.objectContaining({ decision: 'refused' }) as ConnectionRecord);
  });

  it('public addresses in any spelling still pass the range check', async () => {
    const { nonPublicReason, ipv4Literal } = await import('../../../activities/tools/network-proxy');
    expect(ipv4Literal('0x5db8d822')).toBe('93.184.216.34');
    for (const address of ['93.184.216.34', '::ffff:93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946', '2001:4860:4860::8888']) expect(nonPublicReason(address)).toBeUndefined();
  });
});
