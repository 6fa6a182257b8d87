// How `keel status` shows the effective policy: each part with where it came from, the
// bound the session or goal was started with, and what the workspace file asked for and
// did not get.
import type { PolicySource } from '../../machines/policy';
import type { PolicyView } from '../../workflows/definitions';

const FROM: Record<PolicySource, string> = { start: 'start options', default: 'default', file: 'narrowed by the policy file' };

export function policyLines(view: PolicyView | null | undefined): string[] {
  if (!view) return ['policy: (not loaded yet)'];
  const { effective: p, origin: o } = view;
  const lines = [
    `policy: mode ${p.mode} (${FROM[o.mode]}), sandbox ${p.sandbox} (${FROM[o.sandbox]}), network ${p.network ? 'on' : 'off'} (${FROM[o.network]}), headless ask → ${p.headless.ask} (${FROM[o.headless]})`,
    `  upper bound: mode ${o.bound.mode}, sandbox ${o.bound.sandbox}, network ${o.bound.network ? 'on' : 'off'}; a workspace file may only narrow it`,
  ];
  if (p.allow.length) lines.push(`  allow (start options): ${p.allow.join(', ')}`);
  const own = (list: string[], fromFile: string[]) => list.filter((r) => !fromFile.includes(r));
  if (own(p.ask, o.fromFile.ask).length) lines.push(`  ask (start options): ${own(p.ask, o.fromFile.ask).join(', ')}`);
  if (own(p.deny, o.fromFile.deny).length) lines.push(`  deny (start options): ${own(p.deny, o.fromFile.deny).join(', ')}`);
  if (o.fromFile.ask.length) lines.push(`  ask (${o.file}): ${o.fromFile.ask.join(', ')}`);
  if (o.fromFile.deny.length) lines.push(`  deny (${o.file}): ${o.fromFile.deny.join(', ')}`);
  if (o.fromFile.sandboxRules.length) lines.push(`  sandbox rules (${o.file}): ${o.fromFile.sandboxRules.join(', ')}`);
  if (o.ignored.length) lines.push(`  IGNORED from ${o.file ?? 'the policy file'} (would widen the bound): ${o.ignored.join('; ')}`);
  return lines;
}
