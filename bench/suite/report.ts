// Summaries of a bench run: per scenario and variant, min / median / max over rounds of each
// figure and of its ratio to the floor inside the same round; a Markdown table and an SVG
// chart of the ratios (hand-written SVG: no chart library for one bar chart).
import type { Phase } from './measure';
import { percentile, spread, type Spread } from './stats';
import { LABELS, type VariantName } from './variants';

export const FIGURES = {
  workerCpuPerStep: { label: 'worker CPU ms/step', lowerIsBetter: true },
  totalCpuPerStep: { label: 'worker+server CPU ms/step', lowerIsBetter: true },
  stepsPerSecond: { label: 'steps/s', lowerIsBetter: false },
  eventsPerStep: { label: 'history events/step', lowerIsBetter: true },
} as const;
export type Figure = keyof typeof FIGURES;

export function figure(p: Phase, f: Figure): number {
  switch (f) {
    case 'workerCpuPerStep':
      return p.workerCpuMs / p.steps;
    case 'totalCpuPerStep':
      return (p.workerCpuMs + p.serverCpuMs) / p.steps;
    case 'stepsPerSecond':
      return p.steps / (p.wallMs / 1000);
    case 'eventsPerStep':
      return p.eventsTotal / p.steps;
    default: {
      const never: never = f;
      return never;
    }
  }
}

export interface VariantSummary {
  variant: VariantName;
  rounds: number;
  figures: Record<Figure, Spread>;
  /** Ratio to the floor of the same round (absent when the scenario has no floor). */
  ratios: Partial<Record<Figure, Spread>>;
  extra: Record<string, Spread>;
  /** Mean events per step by type over the rounds. */
  eventsPerStepByType: Record<string, number>;
  loadAverage1m: Spread;
  workerRssMiB: Spread;
  serverRssMiB: Spread;
  /** Samples pooled over every round (Phase.samples): their count, p50 and p95. */
  pooled?: Record<string, { n: number; p50: number; p95: number }>;
}

export function summarise(phases: readonly Phase[]): Record<string, VariantSummary[]> {
  const out: Record<string, VariantSummary[]> = {};
  for (const scenario of [...new Set(phases.map((p) => p.scenario))]) {
    const mine = phases.filter((p) => p.scenario === scenario);
    const floorOf = (round: number) => mine.find((p) => p.variant === 'floor' && p.round === round);
    out[scenario] = [...new Set(mine.map((p) => p.variant))].map((variant) => {
      const ps = mine.filter((p) => p.variant === variant);
      const figures = Object.fromEntries((Object.keys(FIGURES) as Figure[]).map((f) => [f, spread(ps.map((p) => figure(p, f)))])) as Record<Figure, Spread>;
      const ratios: Partial<Record<Figure, Spread>> = {};
      if (mine.some((p) => p.variant === 'floor')) {
        for (const f of Object.keys(FIGURES) as Figure[]) {
          ratios[f] = spread(ps.flatMap((p) => {
            const floor = floorOf(p.round);
            return floor ? [figure(p, f) / figure(floor, f)] : [];
          }));
        }
      }
      const extraKeys = [...new Set(ps.flatMap((p) => Object.keys(p.extra)))];
      const steps = ps.reduce((a, p) => a + p.steps, 0);
      const byType: Record<string, number> = {};
      for (const p of ps) for (const [k, v] of Object.entries(p.events)) byType[k] = (byType[k] ?? 0) + v / steps;
      return {
        variant,
        rounds: ps.length,
        figures,
        ratios,
        extra: Object.fromEntries(extraKeys.map((k) => [k, spread(ps.map((p) => p.extra[k] ?? Number.NaN))])),
        eventsPerStepByType: byType,
        loadAverage1m: spread(ps.map((p) => p.loadAverage1m)),
        workerRssMiB: spread(ps.map((p) => p.workerRssMiB)),
        serverRssMiB: spread(ps.map((p) => p.serverRssMiB)),
        ...pooledOf(ps),
      };
    });
  }
  return out;
}

/** Whole numbers as they are; shares, ratios and dollars with 4 decimals. */
// Whole numbers only when min, median and max all are: a median of exactly 1 between 0.72 and
// 1.14 (a slope) must not print as 1 / 1 / 1.
const digitsFor = (s: Spread | undefined): number => (s && s.n && [s.min, s.median, s.max].some((v) => !Number.isInteger(v)) && Math.abs(s.median) < 100 ? 4 : 0);

/** The cost scenario per placement: median over rounds. */
function costTable(rows: readonly VariantSummary[]): string[] {
  const keel = rows.find((r) => r.variant === 'keel');
  if (!keel) return [];
  const m = (k: string) => keel.extra[k]?.median ?? Number.NaN;
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  const usd = (x: number) => `$${x.toFixed(4)}`;
  const vsBest = (x: number, best = 'bestUsd') => `${((x / m(best) - 1) * 100).toFixed(1)} %`;
  return [
    `Per session of ${m('requestsPerSession')} model calls, ${m('inputTokensPerSession')} input tokens (median over rounds):`,
    '',
    '| placement | cache-read share | cache writes (tokens) | $ / session | over best |',
    '|---|---|---|---|---|',
    `| Keel (rolling, previous tail, tools + system, tools) | ${pct(m('keelCacheReadShare'))} | ${m('keelCacheWriteTokens')} | ${usd(m('keelUsd'))} | ${vsBest(m('keelUsd'))} |`,
    `| Keel without caching (promptCaching: false) | ${pct(m('noCachingCacheReadShare'))} | 0 | ${usd(m('noCachingUsd'))} | ${vsBest(m('noCachingUsd'))} |`,
    `| before issue 26 (last tool + last system block), replayed | ${pct(m('mainPlacementCacheReadShare'))} | ${m('mainPlacementCacheWriteTokens')} | ${usd(m('mainPlacementUsd'))} | ${vsBest(m('mainPlacementUsd'))} |`,
    `| best possible placement (computed) | ${pct(m('bestCacheReadShare'))} | ${m('bestCacheWriteTokens')} | ${usd(m('bestUsd'))} | 0.0 % |`,
    '',
    `A goal of ${m('goalRequests')} model calls (planner, task agents, critic), ${m('goalInputTokens')} input tokens:`,
    '',
    '| placement | cache-read share | cache writes (tokens) | $ / goal | over best |',
    '|---|---|---|---|---|',
    `| Keel | ${pct(m('goalKeelCacheReadShare'))} | ${m('goalKeelCacheWriteTokens')} | ${usd(m('goalKeelUsd'))} | ${vsBest(m('goalKeelUsd'), 'goalBestUsd')} |`,
    `| no caching (the same requests without breakpoints, replayed) | 0.0 % | 0 | ${usd(m('goalNoCachingUsd'))} | ${vsBest(m('goalNoCachingUsd'), 'goalBestUsd')} |`,
    `| before issue 26 (last tool + last system block), replayed | ${pct(m('goalMainPlacementCacheReadShare'))} | – | ${usd(m('goalMainPlacementUsd'))} | ${vsBest(m('goalMainPlacementUsd'), 'goalBestUsd')} |`,
    `| best possible placement (computed) | ${pct(m('goalBestCacheReadShare'))} | – | ${usd(m('goalBestUsd'))} | 0.0 % |`,
    ...(keel.extra.compactTurns === undefined ? [] : compactionLines(m, pct, usd)),
    ...(keel.extra.costUsdAllowed === undefined ? [] : overshootLines(m)),
  ];
}

/** The compacting session: its summaries continuing the cached conversation, and the old way's (rebuilt from the same requests, bench/suite/compaction-cost.ts). */
function compactionLines(m: (k: string) => number, pct: (x: number) => string, usd: (x: number) => string): string[] {
  return [
    '',
    `A ${m('compactTurns')}-turn session compacting above ${m('compactAboveTokens')} tokens (\`compactAboveTokens\`): ${m('compactRequests')} model calls, ${m('compactions')} of them summaries:`,
    '',
    '| compaction summary | summaries: cache-read share | summaries $ | session $ |',
    '|---|---|---|---|',
    `| continues the turn's cached request (now) | ${pct(m('compactSummaryCacheReadShare'))} | ${usd(m('compactSummaryUsd'))} | ${usd(m('compactSessionUsd'))} |`,
    `| a request of its own, transcript as text (before issue 47; rebuilt, billed by the stand-in) | 0.0 % | ${usd(m('compactOldSummaryUsd'))} | ${usd(m('compactOldSessionUsd'))} |`,
    `| ratio now / before | – | ${m('compactSummaryOverOld').toFixed(3)} | ${m('compactSessionOverOld').toFixed(3)} |`,
  ];
}

/** One session per limit kind, run until its budget stops it: how far past the limit, against the bound README states. */
function overshootLines(m: (k: string) => number): string[] {
  const row = (kind: string, label: string, unit: (x: number) => string) =>
    `| ${label} | ${unit(m(`${kind}Allowed`))} | ${unit(m(`${kind}Spent`))} | ${(m(`${kind}Overshoot`) * 100).toFixed(2)} % | ${(m(`${kind}Bound`) * 100).toFixed(2)} % | ${m(`${kind}Within`) === 1 ? 'yes' : '**no**'} | ${m(`${kind}Requests`)} |`;
  const tokens = (x: number) => `${Math.round(x)} tokens`;
  const dollars = (x: number) => `$${x.toFixed(4)}`;
  return [
    '',
    'Budget overshoot per limit kind (a session run until its budget stops it; spent = what the stand-in billed):',
    '',
    '| limit | allowed | spent | overshoot | stated bound (input estimate error) | within | calls |',
    '|---|---|---|---|---|---|---|',
    row('costUsd', 'USD', dollars),
    row('inputTokens', 'input tokens', tokens),
    row('outputTokens', 'output tokens', tokens),
  ];
}

function pooledOf(ps: readonly Phase[]): { pooled?: NonNullable<VariantSummary['pooled']> } {
  const keys = [...new Set(ps.flatMap((p) => Object.keys(p.samples ?? {})))];
  if (!keys.length) return {};
  const pooled: NonNullable<VariantSummary['pooled']> = {};
  for (const k of keys) {
    const all = ps.flatMap((p) => p.samples?.[k] ?? []);
    pooled[k] = { n: all.length, p50: percentile(all, 50), p95: percentile(all, 95) };
  }
  return { pooled };
}

/** first-delta: each path's first delta, p50 / p95 pooled over the rounds. */
function firstDeltaTable(rows: readonly VariantSummary[]): string[] {
  const keel = rows.find((r) => r.variant === 'keel');
  const pooled = keel?.pooled;
  if (!pooled) return [];
  const cell = (k: string) => (pooled[k] ? `${fmt(pooled[k].p50, 0)} / ${fmt(pooled[k].p95, 0)} (${pooled[k].n})` : '–');
  return [
    'First text delta, ms, p50 / p95 (samples) pooled over the rounds:',
    '',
    '| path | from the stand-in receiving the model request | from the user\'s request |',
    '|---|---|---|',
    ...['sdk', 'sse', 'ag-ui'].map((p) => `| ${p} | ${cell(`${p}RequestToFirstDeltaMs`)} | ${cell(`${p}SentToFirstDeltaMs`)} |`),
  ];
}

const fmt = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '–');
export const mmm = (s: Spread | undefined, d = 2) => (s && s.n ? `${fmt(s.min, d)} / **${fmt(s.median, d)}** / ${fmt(s.max, d)}` : '–');

export function markdown(title: string, meta: Record<string, string>, summary: Record<string, VariantSummary[]>, notes: readonly string[]): string {
  const lines = [`# ${title}`, '', ...Object.entries(meta).map(([k, v]) => `- ${k}: ${v}`), '', 'Every cell: min / **median** / max over rounds. Ratios are to the floor of the same round.', ''];
  for (const [scenario, rows] of Object.entries(summary)) {
    lines.push(`## ${scenario}`, '');
    // First, Keel against the floor that also runs its reads as local activities: what Keel's
    // own work costs (issue 53's target), before the table of every variant against the floor.
    const keel = rows.find((r) => r.variant === 'keel');
    const k = keel?.ratios.totalCpuPerStep?.median;
    const f = rows.find((r) => r.variant === 'floor-local')?.ratios.totalCpuPerStep?.median;
    if (k !== undefined && f !== undefined) lines.push(`keel ÷ floor-local, from the medians of their ratios to the floor: **${fmt(k / f)}** worker+server CPU per step (keel ${fmt(k)}, floor-local ${fmt(f)}).`, '');
    lines.push('| variant | worker CPU ms/step | ratio | worker+server CPU ms/step | ratio | steps/s | ratio | events/step | worker RSS MiB | server RSS MiB | load (1 min) |');
    lines.push('|---|---|---|---|---|---|---|---|---|---|---|');
    for (const r of rows) {
      lines.push(
        `| ${LABELS[r.variant]} | ${mmm(r.figures.workerCpuPerStep, 1)} | ${mmm(r.ratios.workerCpuPerStep)} | ${mmm(r.figures.totalCpuPerStep, 1)} | ${mmm(r.ratios.totalCpuPerStep)} | ${mmm(r.figures.stepsPerSecond)} | ${mmm(r.ratios.stepsPerSecond)} | ${mmm(r.figures.eventsPerStep, 1)} | ${mmm(r.workerRssMiB, 0)} | ${mmm(r.serverRssMiB, 0)} | ${mmm(r.loadAverage1m, 1)} |`,
      );
    }
    // Issue 31's store target: PostgreSQL's store within 1.1× of the local store's CPU per step.
    const pg = rows.find((r) => r.variant === 'keel-pg');
    if (keel?.figures.totalCpuPerStep.n && pg?.figures.totalCpuPerStep.n) {
      lines.push(
        '',
        `keel-pg ÷ keel, median worker+server CPU per step: **${fmt(pg.figures.totalCpuPerStep.median / keel.figures.totalCpuPerStep.median)}** (worker alone ${fmt(pg.figures.workerCpuPerStep.median / keel.figures.workerCpuPerStep.median)}; PostgreSQL's own CPU is not counted).`,
      );
    }
    const extras = [...new Set(rows.flatMap((r) => Object.keys(r.extra)))];
    if (extras.length) {
      lines.push('', `| variant | ${extras.join(' | ')} |`, `|---|${extras.map(() => '---').join('|')}|`);
      for (const r of rows) lines.push(`| ${r.variant} | ${extras.map((k) => mmm(r.extra[k], digitsFor(r.extra[k]))).join(' | ')} |`);
    }
    if (scenario === 'cost') lines.push('', ...costTable(rows));
    if (scenario === 'first-delta') lines.push('', ...firstDeltaTable(rows));
    const types = [...new Set(rows.flatMap((r) => Object.keys(r.eventsPerStepByType)))].sort();
    lines.push('', `History events per step by type:`, '', `| event type | ${rows.map((r) => r.variant).join(' | ')} |`, `|---|${rows.map(() => '---').join('|')}|`);
    for (const t of types) lines.push(`| ${t} | ${rows.map((r) => fmt(r.eventsPerStepByType[t] ?? 0)).join(' | ')} |`);
    lines.push('');
  }
  if (notes.length) lines.push('## Notes', '', ...notes.map((n) => `- ${n}`), '');
  return lines.join('\n');
}

const COLORS: Record<VariantName, string> = { floor: '#888888', 'floor-local': '#555555', keel: '#1f6feb', 'keel-pg': '#8250df', 'ai-sdk': '#d29922', 'ai-sdk-stream': '#bf8700', 'openai-agents': '#2da44e' };

/** A chart per scenario that has variants with ratios to the floor: [scenario, svg]. */
export function charts(summary: Record<string, VariantSummary[]>): Array<[string, string]> {
  return Object.entries(summary)
    .filter(([, rows]) => rows.some((r) => r.variant !== 'floor' && Object.keys(r.ratios).length))
    .map(([scenario, rows]) => {
      const rounds = Math.max(...rows.map((r) => r.rounds));
      return [scenario, svgChart(`${scenario}: ratio to the floor (median, min–max over ${rounds} round${rounds === 1 ? '' : 's'})`, rows)];
    });
}

/** Bars of the median ratio to the floor per figure and variant, with min–max whiskers. */
export function svgChart(title: string, rows: readonly VariantSummary[]): string {
  const figs = Object.keys(FIGURES) as Figure[];
  const variants = rows.filter((r) => r.variant !== 'floor' && Object.keys(r.ratios).length);
  const W = 760;
  const H = 340;
  const left = 50;
  const top = 40;
  const bottom = 70;
  const plotH = H - top - bottom;
  const maxRatio = Math.max(2, ...variants.flatMap((r) => figs.map((f) => r.ratios[f]?.max ?? 0).filter(Number.isFinite)));
  const yMax = Math.ceil(maxRatio);
  const y = (v: number) => top + plotH - (Math.min(v, yMax) / yMax) * plotH;
  const groupW = (W - left - 20) / figs.length;
  const barW = Math.max(8, (groupW - 20) / Math.max(1, variants.length));
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="11">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="18" text-anchor="middle" font-size="13">${escapeXml(title)}</text>`,
  ];
  for (let v = 0; v <= yMax; v++) parts.push(`<line x1="${left}" x2="${W - 10}" y1="${y(v)}" y2="${y(v)}" stroke="#eee"/><text x="${left - 6}" y="${y(v) + 4}" text-anchor="end">${v}×</text>`);
  parts.push(`<line x1="${left}" x2="${W - 10}" y1="${y(1)}" y2="${y(1)}" stroke="#888" stroke-dasharray="4 3"/><text x="${W - 12}" y="${y(1) - 4}" text-anchor="end" fill="#555">floor = 1</text>`);
  figs.forEach((f, gi) => {
    const gx = left + gi * groupW + 10;
    variants.forEach((r, vi) => {
      const s = r.ratios[f];
      if (!s || !Number.isFinite(s.median)) return;
      const x = gx + vi * barW;
      parts.push(`<rect x="${x}" y="${y(s.median)}" width="${barW - 3}" height="${y(0) - y(s.median)}" fill="${COLORS[r.variant]}"><title>${r.variant} ${FIGURES[f].label}: ${s.median.toFixed(2)}× (${s.min.toFixed(2)}–${s.max.toFixed(2)})</title></rect>`);
      const cx = x + (barW - 3) / 2;
      parts.push(`<line x1="${cx}" x2="${cx}" y1="${y(s.min)}" y2="${y(s.max)}" stroke="black"/>`);
      parts.push(`<text x="${cx}" y="${y(s.median) - 3}" text-anchor="middle" font-size="9">${s.median.toFixed(2)}</text>`);
    });
    parts.push(`<text x="${gx + (variants.length * barW) / 2}" y="${H - bottom + 16}" text-anchor="middle">${escapeXml(FIGURES[f].label)}${FIGURES[f].lowerIsBetter ? ' ↓' : ' ↑'}</text>`);
  });
  variants.forEach((r, i) => {
    const lx = left + (i % 3) * 240;
    const ly = H - 30 + Math.floor(i / 3) * 14;
    parts.push(`<rect x="${lx}" y="${ly - 9}" width="10" height="10" fill="${COLORS[r.variant]}"/><text x="${lx + 14}" y="${ly}">${escapeXml(LABELS[r.variant])}</text>`);
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
