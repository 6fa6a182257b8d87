// Where a long session's growth goes: a worker's CPU profiles split into its first and last turns.
//   BENCH_TURN_TIMES=/tmp/turns.jsonl BENCH_WORKER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" \
//     npm run bench -- --scenario long --variants floor-local,keel --rounds 1 --warmup 0 \
//     --long-turns 100 --long-output-bytes 20000 --name prof --out /tmp/prof-results
//   npx tsx bench/profile-windows.ts /tmp/prof /tmp/turns.jsonl [window turns = 10] [steps a turn = 2]
// The bench appends each long session's turn boundaries on CLOCK_MONOTONIC (µs), the clock V8
// stamps its samples with, and the worker's pid; each profile (one per thread, named
// CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile) is cut at those boundaries. Prints, per
// thread, self time per step by owner in the first and the last window and the difference, then
// the functions whose self time grew most.
import fs from 'node:fs';
import path from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface Profile {
  nodes: Array<{ id: number; callFrame: CallFrame; children?: number[] }>;
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}
interface TurnTimes {
  variant: string;
  pid: number;
  times: number[];
}

const [dir, turnsFile, windowArg, stepsArg] = process.argv.slice(2);
if (!dir || !turnsFile) throw new Error('usage: npx tsx bench/profile-windows.ts PROFILE_DIR TURNS_JSONL [window] [steps a turn]');
const WINDOW = Number(windowArg ?? 10);
/** EARLY_FROM=10: the early window starts at turn 11, past a fresh worker's warm-up (JIT, caches), which the first turns carry. */
const EARLY_FROM = Number(process.env.EARLY_FROM ?? 0);
const STEPS = Number(stepsArg ?? 2);

/** The owner of a function's self time. V8's builtins (JSON, strings, regexps) have no url. */
function ownerOf({ functionName, url }: CallFrame): string {
  if (functionName === '(idle)') return '(idle)';
  if (functionName === '(garbage collector)') return 'GC';
  if (functionName === '(program)') return 'V8 (program)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) {
    if (pkg[1]!.startsWith('@temporalio/')) return `Temporal SDK (${pkg[1]})`;
    return pkg[1]!;
  }
  if (/workflow-bundle/.test(url)) return 'Keel workflow bundle (workflows, machines, SDK workflow lib, zod inside it)';
  if (url.startsWith('node:')) return 'node internals';
  if (url === '') {
    if (/^(stringify|parse|JSON)/.test(functionName) || functionName.includes('JSON')) return 'V8 JSON';
    if (functionName === 'runInContext') return 'vm runInContext (activations)';
    return `native (${functionName || 'anonymous'})`;
  }
  const keel = /\/(activities|worker|workflows|machines|client|server|standin|bench)\//.exec(url);
  if (keel) return `Keel ${keel[1]}/`;
  return url;
}

/**
 * The owners issue 53 asks the remaining cost by: Keel, the Temporal SDK, V8's JSON, GC, zod,
 * the Anthropic SDK, node's http (undici, streams, the socket). A frame without a name is
 * counted as its nearest named caller's (V8's builtins often are: `byteLength`'s inner loop).
 */
function groupOf(frame: CallFrame): string {
  const { functionName: fn, url } = frame;
  if (fn === '(garbage collector)') return 'GC';
  if (fn === '(program)' || fn === 'Codegen' || fn === '(root)') return 'V8 (program, compiler)';
  if (fn === 'FallbackEncoder' || (url === '' && /^(stringify|parse|JSONStringify|JsonStringify|JSON\.)/.test(fn))) return 'V8 JSON';
  if (/node_modules\/zod\//.test(url)) return 'zod';
  if (/node_modules\/@anthropic-ai\/sdk\//.test(url)) return '@anthropic-ai/sdk';
  if (/node_modules\/(@temporalio|protobufjs|rxjs|@grpc|long)\//.test(url) || url.startsWith('wasm://') || fn === 'postMessage' || fn === 'runInContext') return 'Temporal SDK (payloads, bridge, activations)';
  if (/workflow-bundle|\/(activities|worker|workflows|machines|client|shared)\//.test(url)) return 'Keel';
  if (/undici|node:internal\/(webstreams|streams|stream_base|http|net|abort|buffer|encoding)|node:buffer/.test(url) || ['writev', 'writeBuffer', 'writeUtf8String', 'encodeUtf8String', 'byteLength', 'utf8Write', 'encodeInto', 'encode'].includes(fn)) return 'node http (undici, streams, socket, UTF-8)';
  if (url.startsWith('node:') ) return 'node (other)';
  return url === '' ? 'native (other: fs, timers, microtasks)' : 'other packages';
}

const sessions = fs
  .readFileSync(turnsFile, 'utf8')
  .split('\n')
  .filter((l) => l.trim())
  .map((l) => JSON.parse(l) as TurnTimes);

const ms = (us: number) => us / 1000;
const fmt = (x: number) => x.toFixed(2).padStart(8);

for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).sort()) {
  const pid = Number(file.split('.')[3]);
  const session = sessions.find((s) => s.pid === pid);
  if (!session) continue;
  const n = session.times.length - 1;
  if (n < EARLY_FROM + 2 * WINDOW) continue;
  const windows = [
    [session.times[EARLY_FROM]!, session.times[EARLY_FROM + WINDOW]!],
    [session.times[n - WINDOW]!, session.times[n]!],
  ] as const;
  const profile = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const named = (id: number): CallFrame => {
    let at: number | undefined = id;
    while (at !== undefined && byId.get(at)!.functionName === '' && byId.get(at)!.url === '') at = parentOf.get(at);
    return byId.get(at ?? id)!;
  };
  const groups = [new Map<string, number>(), new Map<string, number>()];
  const owners = [new Map<string, number>(), new Map<string, number>()];
  const selfs = [new Map<string, number>(), new Map<string, number>()];
  let t = profile.startTime;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    t += delta;
    const w = windows.findIndex(([a, b]) => t > a && t <= b);
    if (w < 0) return;
    const frame = byId.get(id)!;
    const owner = ownerOf(frame);
    if (owner === '(idle)') return;
    // A sample's delta is the time since the previous one: it belongs to this sample's frame.
    owners[w]!.set(owner, (owners[w]!.get(owner) ?? 0) + delta);
    const group = groupOf(named(id));
    groups[w]!.set(group, (groups[w]!.get(group) ?? 0) + delta);
    const name = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/\/.*?wt-[^/]*\//, '')}:${frame.lineNumber}`;
    selfs[w]!.set(name, (selfs[w]!.get(name) ?? 0) + delta);
  });
  const per = WINDOW * STEPS;
  const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  const [early, late] = owners as [Map<string, number>, Map<string, number>];
  if (total(early) + total(late) < 1000) continue;
  console.log(`\n${session.variant} pid ${pid} ${file}: busy ms/step turns ${EARLY_FROM + 1}–${EARLY_FROM + WINDOW} ${fmt(ms(total(early)) / per)}, turns ${n - WINDOW + 1}–${n} ${fmt(ms(total(late)) / per)}`);
  console.log(`  ${'early'.padStart(8)} ${'late'.padStart(8)} ${'growth'.padStart(8)}  by owner (self time, ms per step)`);
  const [ge, gl] = groups as [Map<string, number>, Map<string, number>];
  const gnames = new Set([...ge.keys(), ...gl.keys()]);
  for (const [g, e, l] of [...gnames].map((g) => [g, ms(ge.get(g) ?? 0) / per, ms(gl.get(g) ?? 0) / per] as const).sort((a, b) => b[2] - b[1] - (a[2] - a[1]))) console.log(`  ${fmt(e)} ${fmt(l)} ${fmt(l - e)}  ${g}`);
  console.log(`  ${'early'.padStart(8)} ${'late'.padStart(8)} ${'growth'.padStart(8)}  by place (self time, ms per step)`);
  const names = new Set([...early.keys(), ...late.keys()]);
  const rows = [...names].map((o) => [o, ms(early.get(o) ?? 0) / per, ms(late.get(o) ?? 0) / per] as const);
  for (const [o, e, l] of rows.sort((a, b) => b[2] - b[1] - (a[2] - a[1])).slice(0, Number(process.env.ROWS ?? 14))) console.log(`  ${fmt(e)} ${fmt(l)} ${fmt(l - e)}  ${o}`);
  console.log('  functions whose self time grew most (ms per step):');
  const [se, sl] = selfs as [Map<string, number>, Map<string, number>];
  const fnames = new Set([...se.keys(), ...sl.keys()]);
  const frows = [...fnames].map((f) => [f, ms(se.get(f) ?? 0) / per, ms(sl.get(f) ?? 0) / per] as const);
  for (const [f, e, l] of frows.sort((a, b) => b[2] - b[1] - (a[2] - a[1])).slice(0, 15)) console.log(`  ${fmt(e)} ${fmt(l)} ${fmt(l - e)}  ${f.slice(0, 150)}`);
}
