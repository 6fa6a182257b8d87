// Generates docs/reference.md: the tables people look up, written from the code that decides
// them, so a page cannot say one thing while the code does another — the model-call retry
// table (machines/model-retry.ts), the built-in tools (machines/builtin-tools.ts), the
// settings a worker reads (shared/env.ts) and the model table with its prices
// (machines/models.ts). `npm run docs` writes it with docs/state-machines.md;
// test/unit/reference-doc.test.ts fails when it is stale.
import { z } from 'zod';
import { builtinToolSpecs } from '../machines/builtin-tools';
import { LOST_ATTEMPT_RETRY, MODEL_FAILURE_CLASSES, RETRY_TABLE, type RetryCaller, type RetryRule } from '../machines/model-retry';
import { MODEL_TABLE_SOURCE, MODELS, type ModelSpec } from '../machines/models';
import type { ToolSpec } from '../machines/tool-spec';
import { KEEL_WORKER_ENV, OTEL_ENV, TEMPORAL_CLIENT_ENV, TEMPORAL_GRPC_META_PREFIX } from '../shared/env';

/** What the page is written from; a test passes a changed copy to see the page follow. */
export interface ReferenceSources {
  readonly retryTable: Readonly<Record<RetryCaller, Readonly<Record<string, RetryRule>>>>;
  readonly lostAttemptRetry: { readonly attempts: number; readonly backoffMs: number };
  readonly tools: readonly ToolSpec[];
  readonly keelEnv: Readonly<Record<string, string>>;
  readonly otelEnv: Readonly<Record<string, string>>;
  readonly temporalEnv: readonly string[];
  readonly models: Readonly<Record<string, ModelSpec>>;
}

export const CODE_SOURCES: ReferenceSources = {
  retryTable: RETRY_TABLE,
  lostAttemptRetry: LOST_ATTEMPT_RETRY,
  tools: builtinToolSpecs,
  keelEnv: KEEL_WORKER_ENV,
  otelEnv: OTEL_ENV,
  temporalEnv: TEMPORAL_CLIENT_ENV,
  models: MODELS,
};

const cell = (text: string): string => text.replaceAll('|', '\\|').replaceAll('\n', ' ');
const seconds = (ms: number): string => (ms === 0 ? '0' : ms % 1000 === 0 ? `${ms / 1000} s` : `${ms / 1000} s`);

function waits(rule: RetryRule): string {
  if (rule.retries === 0) return '—';
  const shown = rule.backoffMs.slice(0, rule.retries).map(seconds).join(' / ');
  const repeats = rule.retries > rule.backoffMs.length ? `, then ${seconds(rule.backoffMs.at(-1) ?? 0)} apart` : '';
  return `${shown}${repeats}`;
}

function retryAfter(rule: RetryRule): string {
  if (!rule.honoursRetryAfter) return 'no';
  return Number.isFinite(rule.maxDelayMs) ? `yes, up to ${seconds(rule.maxDelayMs)}` : 'yes, any';
}

const CALLERS: readonly [RetryCaller, string][] = [
  ['turn', "a session's turn (someone is there to send again)"],
  ['unattended_turn', "a goal's task agent (a failed turn fails its task)"],
  ['answer', "the goal's planner and critic"],
];

function retrySection(s: ReferenceSources): string[] {
  const out = [
    '## Model call retries',
    '',
    'From `RETRY_TABLE` in `machines/model-retry.ts`: every model call is retried in one tier, by the workflow, on durable timers.',
    'A row gives the retries after the first attempt, the wait before each (the last wait repeats), and whether the API\'s `retry-after` is honoured when longer.',
    `The one exception is an attempt lost with its worker (heartbeat timeout): Temporal retries it itself, ${s.lostAttemptRetry.attempts - 1} time, ${seconds(s.lostAttemptRetry.backoffMs)} later (\`LOST_ATTEMPT_RETRY\`).`,
    'How the classes are told apart and what a turn does with each stop reason: [model-calls-and-retries.md](model-calls-and-retries.md).',
    '',
  ];
  for (const [caller, who] of CALLERS) {
    out.push(`### \`${caller}\`: ${who}`, '', '| class | retries | waits | retry-after | compacts first | why |', '|---|---|---|---|---|---|');
    for (const cls of MODEL_FAILURE_CLASSES) {
      const rule = s.retryTable[caller][cls];
      if (rule === undefined) continue;
      out.push(`| \`${cls}\` | ${rule.retries} | ${waits(rule)} | ${retryAfter(rule)} | ${rule.compactFirst ? 'yes' : 'no'} | ${cell(rule.why)} |`);
    }
    out.push('');
  }
  return out;
}

function activityOf(tool: ToolSpec): string {
  const a = tool.activity;
  if (a === undefined) return 'none: the workflow asks a person';
  const where = tool.local ? 'local activity where the workspace is shared' : 'activity';
  const attempts = a.retry.maximumAttempts === 1 ? 'at most once' : `${a.retry.maximumAttempts} attempts`;
  return `${where}: start-to-close ${seconds(a.startToCloseTimeout)}, heartbeat ${seconds(a.heartbeatTimeout)}, ${attempts}`;
}

function inputOf(tool: ToolSpec): string {
  const schema = z.toJSONSchema(tool.input) as { properties?: Record<string, unknown>; required?: string[] };
  const required = new Set(schema.required ?? []);
  return Object.keys(schema.properties ?? {})
    .map((name) => (required.has(name) ? `\`${name}\`` : `\`${name}?\``))
    .join(', ');
}

function toolSection(s: ReferenceSources): string[] {
  return [
    '## Built-in tools',
    '',
    'From `builtinToolSpecs` in `machines/builtin-tools.ts`, in the order the model is offered them. The kind is what the policy judges a call by',
    '([policy.md](policy.md)); the description is what the model reads. Tools of your own: [adding-a-tool.md](adding-a-tool.md).',
    '',
    '| tool | kind | input | runs as | description |',
    '|---|---|---|---|---|',
    ...s.tools.map((t) => `| \`${t.name}\` | ${t.kind} | ${inputOf(t)} | ${activityOf(t)} | ${cell(t.description)} |`),
    '',
  ];
}

function settingsSection(s: ReferenceSources): string[] {
  return [
    '## Settings a worker reads',
    '',
    'From `shared/env.ts`, the one list of every environment variable a worker reads (the docker-compose test checks the worker service and the code against it).',
    'The CLI, `keel serve`, `npm run dev` and the tests read a few more: [configuration.md](configuration.md).',
    '',
    '| variable | meaning |',
    '|---|---|',
    ...Object.entries(s.keelEnv).map(([name, meaning]) => `| \`${name}\` | ${cell(meaning)} |`),
    '',
    'OpenTelemetry (unset: telemetry is off; [telemetry.md](telemetry.md)):',
    '',
    '| variable | meaning |',
    '|---|---|',
    ...Object.entries(s.otelEnv).map(([name, meaning]) => `| \`${name}\` | ${cell(meaning)} |`),
    '',
    `Temporal's standard client settings, read through \`@temporalio/envconfig\`: ${s.temporalEnv.map((n) => `\`${n}\``).join(', ')}, and \`${TEMPORAL_GRPC_META_PREFIX}<NAME>\` (a gRPC header sent with every call).`,
    '',
  ];
}

const usd = (n: number | undefined): string => (n === undefined ? '—' : `$${n}`);

function modelSection(s: ReferenceSources): string[] {
  const thinking = (m: ModelSpec): string => [m.thinking.manual ? 'manual' : '', m.thinking.adaptive ? 'adaptive' : ''].filter(Boolean).join(', ') || 'none';
  const tokens = (n: number): string => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1000}k`);
  return [
    '## Models and prices',
    '',
    `From \`MODELS\` in \`machines/models.ts\` (prices: ${MODEL_TABLE_SOURCE.prices}; limits: ${MODEL_TABLE_SOURCE.limits}; checked ${MODEL_TABLE_SOURCE.checked}).`,
    'USD per million tokens. A session or goal whose model is not here (nor in `KEEL_MODEL_PRICES`) is refused at start; a name may be the id, an alias or the billed snapshot.',
    'Missing cache rates default to 1.25× (5-minute write), 2× (1-hour write) and 0.1× (read) of input; web searches cost $10 per 1 000 unless the row says otherwise.',
    '',
    '| model | billed as | aliases | input | output | cache write 5 m | cache write 1 h | cache read | context | max output | thinking | forced tool | min cacheable |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...Object.entries(s.models).map(
      ([id, m]) =>
        `| \`${id}\` | \`${m.billedAs}\` | ${m.aliases.map((a) => `\`${a}\``).join(', ') || '—'} | ${usd(m.price.input)} | ${usd(m.price.output)} | ${usd(m.price.cacheWrite5m)} | ${usd(m.price.cacheWrite1h)} | ${usd(m.price.cacheRead)} | ${tokens(m.contextWindow)} | ${m.maxOutput.toLocaleString('en-US')} | ${thinking(m)} | ${m.forcedToolChoice ? 'yes' : 'no'} | ${m.minCacheableTokens.toLocaleString('en-US')} |`,
    ),
    '',
  ];
}

export function renderReferenceDoc(s: ReferenceSources = CODE_SOURCES): string {
  return [
    '# Reference tables',
    '',
    '<!-- Generated by `npm run docs` (scripts/reference-doc.ts) from the code. Do not edit: a unit test fails when this file is stale. -->',
    '',
    'Four tables written from the code that decides them: [model call retries](#model-call-retries), [built-in tools](#built-in-tools),',
    '[settings a worker reads](#settings-a-worker-reads), [models and prices](#models-and-prices).',
    '',
    ...retrySection(s),
    ...toolSection(s),
    ...settingsSection(s),
    ...modelSection(s),
  ].join('\n');
}
