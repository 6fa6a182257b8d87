// The only way out of a sandbox with the network granted: an HTTP proxy Keel runs on a
// Unix socket that is mounted into the sandbox (whose own network namespace holds nothing
// but a loopback). It speaks CONNECT (https, anything tunnelled) and plain HTTP with an
// absolute URL. Each request is judged on the host name AND on every address the name
// resolves to: a name on the allow-list that resolves to loopback, link-local or a
// private range is refused, as is the Temporal server and any other endpoint Keel names,
// whatever the list says. The connection then goes to the address that was checked, so a
// second lookup cannot answer differently (DNS rebinding).
import { lookup } from 'node:dns/promises';
import http from 'node:http';
import net from 'node:net';
import { hostAllowed } from '../../machines/sandbox-grant';

export interface ConnectionRecord {
  host: string;
  port: number;
  decision: 'allowed' | 'refused';
  /** The address connected to, when allowed. */
  address?: string;
  /** Why it was refused. */
  reason?: string;
}

export interface EgressProxyOptions {
  socketPath: string;
  /** Host names allowed; undefined: any public host. */
  hosts?: readonly string[];
  /** Endpoints never reachable (the Temporal server, the Keel API), as host:port; matched on resolved addresses. */
  forbidden: readonly string[];
  onConnection(record: ConnectionRecord): void;
}

export interface EgressProxy {
  close(): Promise<void>;
}

/** Addresses a sandboxed command may never reach, by range. */
const PRIVATE = (() => {
  const list = new net.BlockList();
  for (const [net4, bits] of [
    ['0.0.0.0', 8],
    ['10.0.0.0', 8],
    ['100.64.0.0', 10],
    ['127.0.0.0', 8],
    ['169.254.0.0', 16],
    ['172.16.0.0', 12],
    ['192.0.0.0', 24],
    ['192.0.2.0', 24],
    ['192.168.0.0', 16],
    ['198.18.0.0', 15],
    ['198.51.100.0', 24],
    ['203.0.113.0', 24],
    ['224.0.0.0', 4],
    ['240.0.0.0', 4],
  ] as const)
    list.addSubnet(net4, bits, 'ipv4');
  for (const [net6, bits] of [
    ['::', 128],
    ['::1', 128],
    ['64:ff9b::', 96],
    ['64:ff9b:1::', 48],
    ['100::', 64],
    ['2001::', 23],
    ['2001:db8::', 32],
    ['fc00::', 7],
    ['fe80::', 10],
    ['fec0::', 10],
    ['ff00::', 8],
  ] as const)
    list.addSubnet(net6, bits, 'ipv6');
  return list;
})();

/** Why an address is not public, or undefined when it is. */
export function nonPublicReason(address: string): string | undefined {
  const family = net.isIP(address);
  if (family === 0) return `${address} is not an IP address`;
  // An IPv4-mapped IPv6 address is judged as the IPv4 address it maps.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return nonPublicReason(mapped);
  if (PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6')) return `${address}, a loopback, link-local, private or reserved address`;
  return undefined;
}

export async function startEgressProxy(options: EgressProxyOptions): Promise<EgressProxy> {
  const forbidden = await resolveEndpoints(options.forbidden);
  const sockets = new Set<net.Socket>();

  /** The address to connect to, or why not. */
  const judge = async (host: string, port: number): Promise<{ address: string } | { reason: string }> => {
    const name = host.replace(/^\[(.*)\]$/, '$1');
    if (!Number.isInteger(port) || port < 1 || port > 65535) return { reason: `bad port ${port}` };
    if (net.isIP(name)) {
      if (options.hosts !== undefined) return { reason: 'an IP address is not on the allow-list (only host names are)' };
    } else if (!hostAllowed(options.hosts, name)) return { reason: `${name} is not on the allow-list` };
    let addresses: string[];
    try {
      addresses = net.isIP(name) ? [name] : (await lookup(name, { all: true, verbatim: true })).map((a) => a.address);
    } catch (error) {
      return { reason: `${name} does not resolve (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
    }
    if (addresses.length === 0) return { reason: `${name} does not resolve` };
    // Every address, not just the first: a name with one public and one private answer is refused.
    for (const address of addresses) {
      const why = nonPublicReason(address);
      if (why) return { reason: `${name} resolves to ${why}` };
      if (forbidden.has(`${address}|${port}`) || forbidden.has(`${address}|*`)) return { reason: `${address}:${port} is Keel's own control plane` };
    }
    return { address: addresses[0] ?? '' };
  };

  const server = http.createServer((request, response) => {
    void (async () => {
      let url: URL;
      try {
        url = new URL(request.url ?? '');
      } catch {
        response.writeHead(400).end('Keel proxy: requests must use an absolute http:// URL\n');
        return;
      }
      if (url.protocol !== 'http:') {
        response.writeHead(400).end('Keel proxy: only http:// is proxied; use CONNECT for https\n');
        return;
      }
      const port = url.port ? Number(url.port) : 80;
      const verdict = await judge(url.hostname, port);
      if ('reason' in verdict) {
        options.onConnection({ host: url.hostname, port, decision: 'refused', reason: verdict.reason });
        response.writeHead(403, { 'content-type': 'text/plain' }).end(`Keel proxy refused ${url.hostname}:${port}: ${verdict.reason}\n`);
        return;
      }
      options.onConnection({ host: url.hostname, port, decision: 'allowed', address: verdict.address });
      const headers: http.OutgoingHttpHeaders = { ...request.headers, host: url.host };
      delete headers['proxy-connection'];
      delete headers['proxy-authorization'];
      const upstream = http.request({ host: verdict.address, port, method: request.method, path: `${url.pathname}${url.search}`, headers }, (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      });
      upstream.on('error', (error) => {
        if (!response.headersSent) response.writeHead(502, { 'content-type': 'text/plain' });
        response.end(`Keel proxy: ${error.message}\n`);
      });
      request.pipe(upstream);
    })();
  });

  server.on('connect', (request: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    void (async () => {
      const target = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(request.url ?? '');
      if (!target) {
        client.end('HTTP/1.1 400 Bad Request\r\n\r\n');
        return;
      }
      const host = (target[1] ?? '').replace(/^\[(.*)\]$/, '$1');
      const port = Number(target[2]);
      const verdict = await judge(host, port);
      if ('reason' in verdict) {
        options.onConnection({ host, port, decision: 'refused', reason: verdict.reason });
        client.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n\r\nKeel proxy refused ${host}:${port}: ${verdict.reason}\n`);
        return;
      }
      options.onConnection({ host, port, decision: 'allowed', address: verdict.address });
      const upstream = net.connect(port, verdict.address);
      sockets.add(upstream);
      upstream.on('close', () => sockets.delete(upstream));
      upstream.once('connect', () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on('error', () => {
        if (client.writable) client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
        client.destroy();
      });
    })();
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.socketPath, () => resolve());
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** host:port endpoints as the set of `address|port` they resolve to (a name may have several). */
async function resolveEndpoints(endpoints: readonly string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const endpoint of endpoints) {
    const match = /^(\[[^\]]+\]|[^:/]+)(?::(\d+))?$/.exec(endpoint.trim().replace(/^[a-z]+:\/\//i, '').replace(/\/.*$/, ''));
    if (!match) continue;
    const host = (match[1] ?? '').replace(/^\[(.*)\]$/, '$1');
    const port = match[2] ?? '*';
    try {
      const addresses = net.isIP(host) ? [host] : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
      for (const address of addresses) out.add(`${address}|${port}`);
    } catch {
      // A name that does not resolve now cannot be reached through the proxy either.
    }
  }
  return out;
}
