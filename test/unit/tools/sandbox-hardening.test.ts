// What a sandboxed process holds, tried from inside as a hostile command would, as root
// AND as an unprivileged user (bubblewrap started through setpriv as nobody): its own user
// namespace of one id, no capabilities, the syscalls the filter must refuse refused, host
// files and `.keel/` untouched; the self-check that refuses a sandbox missing any of it;
// the network grant that never reaches loopback or the Temporal port; the limits.
import { chmodSync, writeFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../../activities/tools/limits';
import { nonPublicReason } from '../../../activities/tools/network-proxy';
import { pidsHeld } from '../../../activities/tools/command-cgroup';
import { executeTool } from '../../../activities/tools/run-tool';
import { prepareMounts, runProbe, sandboxStartupLine, spawnSandboxed, type SandboxSpec } from '../../../activities/tools/sandbox';
import { currentSeccompArch, syscallNumber } from '../../../activities/tools/seccomp';
import { makeWorkspace, matching, type TestWorkspace } from './context';

const isRoot = process.getuid?.() === 0;
// As root the process limit is a pids cgroup; where none is writable the worker says so at
// start, and a fork bomb in a test would be a real one: that case is left out there.
const forkBombHeld = await pidsHeld();
const arch = currentSeccompArch();
let scratch: string;
/** A bwrap that drops its privileges to nobody first: the unprivileged worker. */
let bwrapAsNobody: string;

beforeAll(async () => {
  scratch = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-hardening-')));
  chmodSync(scratch, 0o755);
  bwrapAsNobody = path.join(scratch, 'bwrap-as-nobody');
  writeFileSync(bwrapAsNobody, '#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups bwrap "$@"\n', { mode: 0o755 });
});
afterAll(() => fs.rm(scratch, { recursive: true, force: true }));

interface Ran {
  output: string;
  code: number | null;
  verdict: Awaited<ReturnType<typeof spawnSandboxed>['verdict']>;
}

/** One sandbox over a fresh workspace (writable by the user it runs as), running `script` with sh. */
async function inSandbox(script: string, program?: string): Promise<Ran & { ws: string; outside: string }> {
  const base = await fs.mkdtemp(path.join(scratch, 'case-'));
  const ws = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  await fs.mkdir(path.join(ws, '.keel'), { recursive: true });
  await fs.mkdir(outside);
  await fs.writeFile(path.join(ws, '.keel/policy.json'), '{"mode":"ask"}');
  await fs.writeFile(path.join(outside, 'secret.txt'), 'SECRET\n');
  for (const dir of [base, ws, path.join(ws, '.keel'), outside]) chmodSync(dir, 0o777);
  const spec: SandboxSpec = { sandbox: { level: 'workspace-write', network: false }, workspace: ws, cwd: ws, limits: DEFAULT_LIMITS };
  const mounts = await prepareMounts(spec);
  const { child, verdict } = spawnSandboxed(spec, ['/bin/sh', '-c', script], { env: { PATH: '/usr/bin:/bin:/usr/sbin:/sbin', OUTSIDE: outside }, stdin: 'ignore', detached: false, mounts, ...(program ? { program } : {}) });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  return { output, code, verdict: await verdict, ws, outside };
}

const users = [...(isRoot ? [{ name: 'root', program: undefined }] : []), { name: isRoot ? 'nobody' : 'this user', program: isRoot ? 'nobody' : undefined }];

describe.each(users)('a sandboxed process, worker as $name', ({ program }) => {
  const bwrap = () => (program === 'nobody' ? bwrapAsNobody : undefined);

  it('has its own user namespace of one id and no capabilities', async () => {
    const ran = await inSandbox('cat /proc/self/uid_map; grep -E "^Cap(Eff|Prm|Bnd)|^NoNewPrivs|^Seccomp:" /proc/self/status', bwrap());
    expect(ran.verdict).toMatchObject({ ok: true });
    const map = ran.output.split('\n')[0]?.trim().split(/\s+/);
    expect(map?.[2]).toBe('1');
    expect(ran.output).not.toMatch(/4294967295/);
    expect(ran.output).toMatch(/CapEff:\s+0000000000000000/);
    expect(ran.output).toMatch(/CapBnd:\s+0000000000000000/);
    expect(ran.output).toMatch(/NoNewPrivs:\s+1/);
    expect(ran.output).toMatch(/Seccomp:\s+2/);
  });

  it.runIf(arch)('has open_by_handle_at, mount, umount, unshare, setns, ptrace, keyctl, bpf, perf, kexec, modules and TIOCSTI refused', async () => {
    const a = arch ?? 'x64';
    const calls: [string, string][] = [
      ['open_by_handle_at', `syscall(${syscallNumber(a, 'open_by_handle_at')}, 3, 0, 0)`],
      ['name_to_handle_at', `syscall(${syscallNumber(a, 'name_to_handle_at')}, -100, $p, 0, 0, 0)`],
      ['mount', `syscall(${syscallNumber(a, 'mount')}, $n, $t, $f, 0, 0)`],
      ['umount2', `syscall(${syscallNumber(a, 'umount2')}, $q, 0)`],
      ['unshare', `syscall(${syscallNumber(a, 'unshare')}, 0x10000000)`],
      ['setns', `syscall(${syscallNumber(a, 'setns')}, 0, 0)`],
      ['clone-newuser', `syscall(${syscallNumber(a, 'clone')}, 0x10000011, 0, 0, 0, 0)`],
      ['ptrace', `syscall(${syscallNumber(a, 'ptrace')}, 16, 1, 0, 0)`],
      ['keyctl', `syscall(${syscallNumber(a, 'keyctl')}, 0, -3, 0)`],
      ['bpf', `syscall(${syscallNumber(a, 'bpf')}, 0, 0, 0)`],
      ['perf_event_open', `syscall(${syscallNumber(a, 'perf_event_open')}, 0, 0, -1, -1, 0)`],
      ['kexec_load', `syscall(${syscallNumber(a, 'kexec_load')}, 0, 0, 0, 0)`],
      ['init_module', `syscall(${syscallNumber(a, 'init_module')}, 0, 0, $e)`],
      ['finit_module', `syscall(${syscallNumber(a, 'finit_module')}, 0, $e, 0)`],
      ['TIOCSTI', `syscall(${syscallNumber(a, 'ioctl')}, 0, 0x5412, $x)`],
    ];
    // perl's syscall passes strings by address and needs them in variables, not literals.
    const strings = '$n = "none"; $t = "/tmp"; $f = "tmpfs"; $p = "/"; $q = "/proc"; $e = ""; $x = "x";';
    const perl = strings + calls.map(([name, call]) => `$! = 0; $r = ${call}; print "${name} $r ", ($!+0), "\\n";`).join(' ');
    const ran = await inSandbox(`perl -e '${perl}'`, bwrap());
    expect(ran.verdict).toMatchObject({ ok: true });
    for (const [name] of calls) expect(ran.output, name).toMatch(new RegExp(`^${name} -1 1$`, 'm'));
  });

  it('cannot mount, unmount, mknod or unshare with the tools either; .keel/ and host files stay as they were', async () => {
    const ran = await inSandbox(
      [
        'mount -t tmpfs none /tmp 2>/dev/null && echo MOUNTED',
        'umount .keel 2>/dev/null && echo UNMOUNTED',
        'umount -l .keel 2>/dev/null && echo UNMOUNTED',
        `echo '{"mode":"full-auto","sandbox":"off"}' > .keel/policy.json 2>/dev/null && echo POLICY-REWRITTEN`,
        'mknod dev-null c 1 3 2>/dev/null && echo MKNOD',
        'unshare -U -r true 2>/dev/null && echo UNSHARED',
        'cat "$OUTSIDE/secret.txt" 2>/dev/null',
        'echo x > "$OUTSIDE/new.txt" 2>/dev/null && echo WROTE-OUTSIDE',
        // Writable only if /proc were: test -w asks access(), nothing is written.
        '[ -w /proc/sys/kernel/core_pattern ] && echo CORE-PATTERN-WRITABLE',
        '[ -w /proc/sysrq-trigger ] && echo SYSRQ-WRITABLE',
        'echo done',
      ].join('; '),
      bwrap(),
    );
    expect(ran.verdict).toMatchObject({ ok: true });
    expect(ran.output).toContain('done');
    for (const word of ['MOUNTED', 'UNMOUNTED', 'POLICY-REWRITTEN', 'MKNOD', 'UNSHARED', 'SECRET', 'WROTE-OUTSIDE', 'WRITABLE']) expect(ran.output).not.toContain(word);
    expect(await fs.readFile(path.join(ran.ws, '.keel/policy.json'), 'utf8')).toBe('{"mode":"ask"}');
    expect(await fs.readdir(ran.outside)).toEqual(['secret.txt']);
    await expect(fs.stat(path.join(ran.ws, 'dev-null'))).rejects.toThrow(/ENOENT/);
  });
});

describe('the self-check', () => {
  /** A bubblewrap that leaves out some of its arguments: a sandbox missing what it should hold. */
  const without = (name: string, drop: string[][]) => {
    const file = path.join(scratch, `bwrap-${name}`);
    const filter = drop.map((words) => `${words.map((w) => `"$1" = "${w}"`).join(' ')}`);
    // Walks the arguments, skipping each dropped pair or flag.
    const script = [
      '#!/bin/bash',
      'args=()',
      'while [ $# -gt 0 ]; do',
      ...drop.map((words, i) => `  if [ "$1" = "${words[0]}" ]${words[1] ? ` && [ "$2" = "${words[1]}" ]` : ''}; then shift ${words.length}; continue; fi # ${filter[i]}`),
      '  args+=("$1"); shift',
      'done',
      'exec bwrap "${args[@]}"',
    ].join('\n');
    writeFileSync(file, `${script}\n`, { mode: 0o755 });
    return file;
  };

  it('refuses a sandbox without the seccomp filter, names it, and never runs the command', async () => {
    const fake = without('no-seccomp', [['--seccomp', '3']]);
    const ran = await inSandbox('touch ran.txt', fake);
    expect(ran.verdict).toEqual({ ok: false, reason: matching(/^seccomp filter: not installed/) });
    await expect(fs.stat(path.join(ran.ws, 'ran.txt'))).rejects.toThrow(/ENOENT/);
    const probe = await runProbe(fake);
    expect(probe).toEqual({ ok: false, reason: matching(/^seccomp filter/) });
    expect(sandboxStartupLine(probe)).toMatch(/^sandbox: UNAVAILABLE — seccomp filter: .*Sandboxed tools are refused/);
  });

  it.runIf(isRoot)('refuses, as root, a sandbox without its own user namespace and with capabilities', async () => {
    const fake = without('no-userns', [['--unshare-user'], ['--cap-drop', 'ALL']]);
    const ran = await inSandbox('touch ran.txt', fake);
    expect(ran.verdict).toEqual({ ok: false, reason: matching(/^(own user namespace|no capabilities)/) });
    await expect(fs.stat(path.join(ran.ws, 'ran.txt'))).rejects.toThrow(/ENOENT/);
  });

  it('states what it verified at start', async () => {
    const probe = await runProbe('bwrap');
    expect(probe).toMatchObject({ ok: true });
    expect(sandboxStartupLine(probe)).toMatch(/^sandbox: verified own user namespace \(uid map "\d+ \d+ 1"\), no capabilities \(CapEff 0\), no_new_privs, seccomp filter \(mount and unshare refused\), read-only \/proc, (a process limit|NO process limit)/);
  });
});

describe('network grant', () => {
  let t: TestWorkspace;
  let server: Server;
  let port = 0;
  let connections = 0;
  beforeAll(async () => {
    server = createServer((socket) => {
      connections += 1;
      socket.end('HELLO-FROM-HOST\n');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(async () => {
    t = await makeWorkspace();
    connections = 0;
  });
  afterEach(() => t.cleanup());

  it('never reaches host loopback or the Temporal port, even for a name on the allow-list; each connection is logged as progress', async () => {
    const result = await executeTool(t.ctx({ sandbox: { level: 'workspace-write', network: true, hosts: ['localhost'] } }), 'run_command', {
      command: [
        `curl -sS -m 5 http://localhost:${port}/`,
        `curl -sS -m 5 -p https://localhost:${port}/`,
        'curl -sS -m 5 http://localhost:7233/',
        `curl -sS -m 5 --noproxy '*' http://127.0.0.1:${port}/`,
        `node -e 'require("net").connect(${port},"127.0.0.1").on("data",d=>process.stdout.write(d)).on("error",e=>console.log("NET-ERR",e.code))'`,
        // Writable only if /proc were: test -w asks access(), nothing is written.
        '[ -w /proc/sys/kernel/core_pattern ] && echo CORE-PATTERN-WRITABLE',
        '[ -w /proc/sysrq-trigger ] && echo SYSRQ-WRITABLE',
        'echo done',
      ].join('; '),
    });
    expect(result.content).toContain('done');
    expect(result.content).not.toContain('HELLO-FROM-HOST');
    expect(connections).toBe(0);
    expect(result.content).toMatch(/Keel proxy refused localhost:\d+: localhost resolves to 127\.0\.0\.1, a loopback/);
    expect(result.content).toMatch(/NET-ERR ECONNREFUSED/);
    const logged = t.progress.flatMap((p) => ((p as { network?: unknown }).network ? [(p as { network: { host: string; port: number; decision: string } }).network] : []));
    expect(logged).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ host: 'localhost', port, decision: 'refused' }),
        expect.objectContaining({ host: 'localhost', port: 7233, decision: 'refused' }),
      ]),
    );
    expect(result.content).toMatch(/\[network: refused localhost:/);
  });

  it('refuses names off the allow-list and IP literals when there is a list', async () => {
    const result = await executeTool(t.ctx({ sandbox: { level: 'workspace-write', network: true, hosts: ['registry.npmjs.org'] } }), 'run_command', {
      command: `curl -sS -m 5 http://example.com/; curl -sS -m 5 http://127.0.0.1:${port}/; echo done`,
    });
    expect(result.content).toMatch(/refused example\.com:80: example\.com is not on the allow-list/);
    expect(result.content).toMatch(/refused 127\.0\.0\.1:\d+: an IP address is not on the allow-list/);
    expect(connections).toBe(0);
  });

  it('without a list, still never a private, loopback or link-local address', () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '172.20.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1']) {
      expect(nonPublicReason(address), address).toBeDefined();
    }
    for (const address of ['1.1.1.1', '104.16.0.1', '2606:4700::1111']) expect(nonPublicReason(address), address).toBeUndefined();
  });
});

describe('limits', () => {
  let t: TestWorkspace;
  beforeEach(async () => {
    t = await makeWorkspace();
  });
  afterEach(() => t.cleanup());
  const run = (command: string, limits: Record<string, number>) =>
    executeTool(t.ctx({ sandbox: { level: 'workspace-write', network: false, limits } }), 'run_command', { command, timeout_seconds: 60 });

  const cases: [string, string, Record<string, number>, RegExp][] = [
    ['processes', 'b() { b | b & }; b; sleep 20', { processes: 64 }, /limit: process limit: 64 processes/],
    ['memory', `perl -e '$x = "a" x (1<<31); print length($x)'`, { memoryMiB: 512 }, /limit: memory limit: 512 MiB/],
    ['cpu', 'while :; do :; done', { cpuSeconds: 1 }, /limit: CPU time limit: 1 s/],
    ['file-size', 'head -c 3000000 /dev/zero > big', { fileMiB: 1 }, /limit: file size limit: 1 MiB/],
    ['tmp-space', 'head -c 3000000 /dev/zero > /tmp/big', { tmpMiB: 1 }, /limit: disk space: the sandbox \/tmp holds 1 MiB/],
    // Per process, so each of a command's processes: the proxy's connection cap holds the worker's side (proxy-cap.test.ts).
    ['open-files', `node -e 'const fs=require("fs");for(;;)fs.openSync("/dev/null","r")'`, { openFiles: 64 }, /limit: open-files limit: 64 descriptors per process/],
  ];
  it.each(cases.filter(([kind]) => kind !== 'processes' || forkBombHeld))('%s: ends the call with status limit, naming it', async (kind, command, limits, message) => {
    const started = Date.now();
    const result = await run(command, limits);
    expect(result.is_error).toBe(true);
    expect(result.content).toMatch(message);
    expect(result.facts).toMatchObject({ kind: 'command', limit: kind });
    expect(Date.now() - started).toBeLessThan(30_000);
  });
});
