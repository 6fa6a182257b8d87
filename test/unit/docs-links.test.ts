// The README is the front door and docs/ holds the rest: every relative link in them must
// lead somewhere (a file that exists, and a heading that exists when the link names one),
// the README stays short, and it keeps the two commands CI runs (.ci/run) verbatim.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const pages = ['README.md', ...readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

// Pages other helpers are writing, linked from the README and the index before they land:
// skipped only while absent, checked like any page once merged. The lead empties this list.
const PENDING_PAGES = new Set<string>();

/** GitHub's heading anchor: lower case, punctuation but `-` and `_` dropped, spaces as `-`; repeats get -1, -2… */
export function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6} (.*)$/.exec(line);
    if (!heading) continue;
    const base = heading[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N}\- _]/gu, '').replaceAll(' ', '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Relative links outside code: `[text](target)`, targets without a scheme. */
export function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((target) => !/^[a-z][a-z+.-]*:/i.test(target));
}

function broken(page: string): string[] {
  const text = readFileSync(path.join(root, page), 'utf8');
  const out: string[] = [];
  for (const target of relativeLinks(text)) {
    const [file, anchor] = target.split('#') as [string, string | undefined];
    const resolved = file === '' ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), decodeURI(file)));
    if (PENDING_PAGES.has(resolved) && !existsSync(path.join(root, resolved))) continue;
    if (!existsSync(path.join(root, resolved))) {
      out.push(`${page}: ${target} (no ${resolved})`);
      continue;
    }
    if (anchor !== undefined && resolved.endsWith('.md') && statSync(path.join(root, resolved)).isFile()) {
      if (!anchorsOf(readFileSync(path.join(root, resolved), 'utf8')).has(anchor)) out.push(`${page}: ${target} (no heading #${anchor} in ${resolved})`);
    }
  }
  return out;
}

describe('README and docs/', () => {
  it('README.md is at most 300 lines', () => {
    expect(readFileSync(path.join(root, 'README.md'), 'utf8').trimEnd().split('\n').length).toBeLessThanOrEqual(300);
  });

  it('every relative link in README.md and docs/*.md resolves, anchors included', () => {
    expect(pages.length).toBeGreaterThan(15);
    expect(pages.flatMap(broken)).toEqual([]);
  });

  it('finds a broken file link and a broken anchor (the check can fail)', () => {
    expect(relativeLinks('see [a](docs/nope.md) and [b](#x) but not `[c](d.md)` nor [e](https://x.y)')).toEqual(['docs/nope.md', '#x']);
    expect(anchorsOf('# Console and HTTP API (`keel serve`)\n## Limits\n## Limits\n```\n# not a heading\n```')).toEqual(new Set(['console-and-http-api-keel-serve', 'limits', 'limits-1']));
  });

  it('the docs index lists every page in docs/', () => {
    const index = readFileSync(path.join(root, 'docs/README.md'), 'utf8');
    for (const page of pages.filter((p) => p.startsWith('docs/') && p !== 'docs/README.md')) expect(index, page).toContain(`(${path.basename(page)})`);
  });

  it("keeps CI's two commands (.ci/run) verbatim in the README's quick start", () => {
    const ci = readFileSync(path.join(root, '.ci/run'), 'utf8');
    const commands = [...ci.matchAll(/^(npm ci && npm (?:run )?\w+)$/gm)].map((m) => m[1]!);
    expect(commands).toEqual(['npm ci && npm test', 'npm ci && npm run demo']);
    const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
    const quickStart = readme.slice(readme.indexOf('## Quick start'), readme.indexOf('\n## ', readme.indexOf('## Quick start') + 1));
    for (const command of commands) expect(quickStart).toMatch(new RegExp(`^${command.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\s|$)`, 'm'));
  });
});
