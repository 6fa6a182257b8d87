// Where a worker's CPU goes, from V8 CPU profiles: `npx tsx bench/profile-summary.ts DIR`.
// Record them with the bench (a profile per thread of each variant's worker; thread 0 runs the
// activities, the last thread the workflows):
//   BENCH_WORKER_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR" npm run bench -- --scenario concurrent \
//     --variants floor,keel --rounds 1 --turns 3 --sessions 50 --name prof --out /tmp/prof-results
// Prints, per profile, the busy time (all but idle) split by where the code lives, and the
// functions with the most self time. A profile covers its thread's whole life (start-up too):
// compare the variants' workflow threads, which do little before the bench's first session.
import fs from 'node:fs';
import path from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface Profile {
  nodes: Array<{ id: number; callFrame: CallFrame }>;
  samples: number[];
  timeDeltas: number[];
}

const dir = process.argv[2];
if (!dir) throw new Error('usage: npx tsx bench/profile-summary.ts DIR (a directory of .cpuprofile files)');

/** Where a function lives, coarsely: the SDK's packages, zod, other packages, Keel's bundle, Node. */
function placeOf({ functionName, url }: CallFrame): string {
  if (functionName === '(idle)' || functionName === '(garbage collector)' || functionName === '(program)') return functionName;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(?:lib|dist|src)?\/?(.*)$/.exec(url);
  if (pkg) {
    // The SDK's promise hook captures a stack for every promise a workflow creates (its stack-trace query).
    if (pkg[1] === '@temporalio/worker' && pkg[2]!.startsWith('workflow/vm-shared')) return '@temporalio/worker: promise stacks (vm-shared)';
    return pkg[1]!;
  }
  if (/workflow-bundle/.test(url)) return 'workflow bundle (workflow code, its modules)';
  if (url.startsWith('node:')) return 'node internals';
  if (url === '') return functionName === 'runInContext' ? 'vm runInContext (activations)' : 'native';
  return `keel: ${url.replace(/^file:\/\/\/.*?\/(activities|worker|workflows|machines|client)\//, '$1/')}`;
}

for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).sort()) {
  const profile = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const self = new Map<string, number>();
  const places = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const frame = byId.get(id)!;
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    const place = placeOf(frame);
    places.set(place, (places.get(place) ?? 0) + ms);
    if (place === '(idle)') return;
    busy += ms;
    const name = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/\//, '')}:${frame.lineNumber}`;
    self.set(name, (self.get(name) ?? 0) + ms);
  });
  console.log(`\n${file}: busy ${Math.round(busy)} ms`);
  for (const [place, ms] of [...places].filter(([p]) => p !== '(idle)').sort((a, b) => b[1] - a[1]).slice(0, 12)) {
    console.log(`  ${String(Math.round(ms)).padStart(7)} ms  ${((100 * ms) / busy).toFixed(1).padStart(5)} %  ${place}`);
  }
  console.log('  most self time:');
  for (const [name, ms] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 10)) console.log(`  ${String(Math.round(ms)).padStart(7)} ms  ${name.slice(0, 140)}`);
}
