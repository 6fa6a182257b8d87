// Reads a heap profile from bench/alloc-profile.cjs: `npx tsx bench/alloc-summary.ts FILE [N]`.
// Prints the bytes allocated in the sampled window, the functions that allocated most
// (self), and the same bytes by the nearest frame of Keel's own code (activities/, worker/,
// workflows/, machines/, client/; "(none)": the SDK's and Node's own work, not on Keel's behalf).
import fs from 'node:fs';

interface Node {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children?: Node[];
}

const [file, top = '25'] = process.argv.slice(2);
if (!file) throw new Error('usage: npx tsx bench/alloc-summary.ts FILE.heapprofile [N]');
const { head } = JSON.parse(fs.readFileSync(file, 'utf8')) as { head: Node };

const short = ({ functionName, url, lineNumber }: Node['callFrame']) =>
  `${functionName || '(anonymous)'} ${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/\/.*?\/(activities|worker|workflows|machines|client)\//, '$1/')}:${lineNumber}`;
const isKeel = (name: string) => /^\S+ (activities|worker|workflows|machines|client)\//.test(name);

const bySelf = new Map<string, number>();
const byKeel = new Map<string, number>();
let total = 0;
const add = (map: Map<string, number>, key: string, bytes: number) => map.set(key, (map.get(key) ?? 0) + bytes);
(function walk(node: Node, keel: string) {
  const name = short(node.callFrame);
  const nearest = isKeel(name) ? name : keel;
  if (node.selfSize > 0) {
    total += node.selfSize;
    add(bySelf, name, node.selfSize);
    add(byKeel, nearest, node.selfSize);
  }
  for (const child of node.children ?? []) walk(child, nearest);
})(head, '(none)');

const mb = (bytes: number) => (bytes / 1e6).toFixed(2).padStart(7);
console.log(`${file}: ${mb(total)} MB allocated in the window`);
console.log('  most allocated (self):');
for (const [name, bytes] of [...bySelf].sort((a, b) => b[1] - a[1]).slice(0, Number(top))) console.log(`  ${mb(bytes)}  ${name.slice(0, 140)}`);
console.log('  by the nearest frame of Keel\'s code:');
for (const [name, bytes] of [...byKeel].sort((a, b) => b[1] - a[1]).slice(0, Number(top))) console.log(`  ${mb(bytes)}  ${name.slice(0, 140)}`);
