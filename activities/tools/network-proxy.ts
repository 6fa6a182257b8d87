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
  /** Open connections this proxy holds at once (default MAX_CONNECTIONS_PER_GRANT). */
  maxConnections?: number;
}

/**
 * Open connections one grant may hold through the proxy at once, and all grants of the
 * worker together. Every connection costs the worker a descriptor or two; without a cap one
 * command opening sockets in a loop exhausts the worker's descriptors and takes down every
 * session on it. A connection over either cap is closed as soon as it is accepted.
 */
export const MAX_CONNECTIONS_PER_GRANT = 128;
export const MAX_CONNECTIONS_PER_WORKER = 1024;
let workerConnections = 0;
let workerMaxConnections = MAX_CONNECTIONS_PER_WORKER;

/** Tests lower the worker's cap to reach it with few sockets; returns the previous value. */
export function setWorkerConnectionCap(max: number): number {
  const previous = workerMaxConnections;
  workerMaxConnections = max;
  return previous;
}

/** Connections open through every proxy of this worker. */
export function openProxyConnections(): number {
  return workerConnections;
}

/** The host and port of a record about the cap, which refuses before any request is read. */
export const CAP_RECORD_HOST = '(any)';

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
    // Embedded IPv4 forms are judged as their IPv4 address above; these never route publicly either.
    ['::', 96],
    ['::ffff:0:0:0', 96],
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

/**
 * An IPv6 address as its eight 16-bit groups, or undefined when it is not one. Every
 * spelling the kernel accepts (`::`, leading zeros, a dotted IPv4 tail) comes out the same.
 */
function ipv6Groups(address: string): number[] | undefined {
  if (net.isIPv6(address) === false) return undefined;
  let text = address.replace(/%.*$/, '');
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1];
  if (dotted) {
    const [a = 0, b = 0, c = 0, d = 0] = dotted.split('.').map(Number);
    text = `${text.slice(0, -dotted.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const part = (s: string) => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const left = part(head);
  const right = tail === undefined ? [] : part(tail);
  const groups = tail === undefined ? left : [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

/** The IPv4 address an IPv6 address carries, in the forms that reach it: v4-mapped, v4-compatible, SIIT, NAT64, 6to4. */
function embeddedIpv4(groups: number[]): string | undefined {
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  const zero = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  const [g0 = 0, g1 = 0, g2 = 0, , g4 = 0, g5 = 0, g6 = 0, g7 = 0] = groups;
  if (zero(0, 5) && (g5 === 0xffff || g5 === 0)) return v4(g6, g7); // ::ffff:a.b.c.d, ::a.b.c.d
  if (zero(0, 4) && g4 === 0xffff && g5 === 0) return v4(g6, g7); // ::ffff:0:a.b.c.d (SIIT)
  if (g0 === 0x64 && g1 === 0xff9b) return v4(g6, g7); // 64:ff9b::/96 and 64:ff9b:1::/48 (NAT64)
  if (g0 === 0x2002) return v4(g1, g2); // 2002:AABB:CCDD::/48 (6to4)
  return undefined;
}

/** Why an address is not public, or undefined when it is. */
export function nonPublicReason(address: string): string | undefined {
  const family = net.isIP(address);
  if (family === 0) return `${address} is not an IP address`;
  if (family === 6) {
    const groups = ipv6Groups(address);
    if (!groups) return `${address} is not an IP address`;
    // An IPv6 address that carries an IPv4 one is judged as that IPv4 address as well.
    const inner = embeddedIpv4(groups);
    if (inner) {
      const why = nonPublicReason(inner);
      if (why) return `${address} (${inner}): ${why}`;
    }
    const canonical = groups.map((g) => g.toString(16)).join(':');
    if (PRIVATE.check(canonical, 'ipv6')) return `${address}, a loopback, link-local, private or reserved address`;
    return undefined;
  }
  if (PRIVATE.check(address, 'ipv4')) return `${address}, a loopback, link-local, private or reserved address`;
  return undefined;
}

/**
 * An IPv4 literal in any spelling inet_aton takes (`0x7f000001`, `2130706433`, `0177.1`,
 * `127.1`) as a dotted quad, or undefined when `host` is not one. Such a name never reaches
 * the resolver: it is judged as the address it spells.
 */
export function ipv4Literal(host: string): string | undefined {
  const parts = host.split('.');
  if (parts.length < 1 || parts.length > 4 || parts.some((p) => !/^(0x[0-9a-f]*|0[0-7]*|[1-9][0-9]*)$/i.test(p))) return undefined;
  const values = parts.map((p) => (/^0x/i.test(p) ? parseInt(p.slice(2) || '0', 16) : p.length > 1 && p.startsWith('0') ? parseInt(p, 8) : Number(p)));
  const last = values.pop() ?? 0;
  if (values.some((v) => v > 255) || last >= 256 ** (4 - values.length)) return undefined;
  let n = last;
  values.forEach((v, i) => (n += v * 256 ** (3 - i)));
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

export async function startEgressProxy(options: EgressProxyOptions): Promise<EgressProxy> {
  const forbidden = await resolveEndpoints(options.forbidden);
  const sockets = new Set<net.Socket>();

  /** The address to connect to, or why not. */
  const judge = async (host: string, port: number): Promise<{ address: string } | { reason: string }> => {
    const bare = host.replace(/^\[(.*)\]$/, '$1');
    const name = ipv4Literal(bare) ?? bare;
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

  const maxConnections = options.maxConnections ?? MAX_CONNECTIONS_PER_GRANT;
  let open = 0;
  // Refusals are counted, and one record is reported each time the cap is reached again, so
  // that a flood of refused connections is not also a flood of progress events.
  let refusedSinceReport = 0;
  let atCap = false;
  server.on('connection', (socket: net.Socket) => {
    const grantFull = open >= maxConnections;
    if (grantFull || workerConnections >= workerMaxConnections) {
      socket.destroy();
      refusedSinceReport += 1;
      if (!atCap) {
        atCap = true;
        const reason = grantFull
          ? `connection cap: ${maxConnections} open connections for this command (close some to open more)`
          : `connection cap: ${workerMaxConnections} open connections through the worker's proxies`;
        options.onConnection({ host: CAP_RECORD_HOST, port: 0, decision: 'refused', reason });
      }
      return;
    }
    if (atCap && refusedSinceReport > 1) options.onConnection({ host: CAP_RECORD_HOST, port: 0, decision: 'refused', reason: `connection cap: ${refusedSinceReport} connections were refused at the cap` });
    atCap = false;
    refusedSinceReport = 0;
    open += 1;
    workerConnections += 1;
    socket.once('close', () => {
      open -= 1;
      workerConnections -= 1;
    });
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
