// glob: files whose workspace path matches a glob pattern. Symlinks are listed but
// never followed; .git, .keel and node_modules are skipped unless the pattern names them.
import picomatch from 'picomatch';
import { type ToolContext } from './context';
import { type ToolResult, toolOk } from './result';
import { assertGlobInside, SKIPPED_DIRS, walk } from './walk';
import { relativePath } from './workspace';
import { type GlobInput } from '../../machines/builtin-tools';
// The input schema and the description are the tool's spec, pure, so the policy and workflows read them too.
export { globInput, type GlobInput, GLOB_DESCRIPTION } from '../../machines/builtin-tools';

const MAX_RESULTS = 500;
const MAX_WALK = 200_000;

export async function glob(ctx: ToolContext, input: GlobInput): Promise<ToolResult> {
  assertGlobInside(input.pattern);
  const start = relativePath(input.path ?? '.');
  const isMatch = picomatch(input.pattern, { dot: true });
  // Skipped directories are entered only when the pattern itself starts with one.
  const namesSkipped = [...SKIPPED_DIRS].filter((dir) => !input.pattern.startsWith(dir));
  const descend = (_rel: string, name: string) => !namesSkipped.includes(name);
  const matches: string[] = [];
  let total = 0;
  for await (const entry of walk(ctx.ws, start, { maxEntries: MAX_WALK, signal: ctx.signal, descend })) {
    if (entry.rel.split('/').some((segment) => namesSkipped.includes(segment))) continue;
    if (entry.kind === 'dir' || !isMatch(entry.rel)) continue;
    total += 1;
    if (matches.length < MAX_RESULTS) matches.push(start === '.' ? entry.rel : `${start}/${entry.rel}`);
  }
  if (total === 0) return toolOk(`No files match ${input.pattern}${start === '.' ? '' : ` under ${start}`}.`);
  const more = total > matches.length ? `\n[${total - matches.length} more matches not shown; narrow the pattern]` : '';
  return toolOk(matches.join('\n') + more);
}
