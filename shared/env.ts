// Every environment variable a Keel worker reads, in one place: worker/config.ts reads
// the Temporal ones through @temporalio/envconfig, the activities read the rest. The
// docker-compose test checks the worker service against this list (and this list against
// the code), and the README's configuration table is written from it.

/** Read by @temporalio/envconfig (loadWorkerConfig): the standard Temporal client settings. */
export const TEMPORAL_CLIENT_ENV = [
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_API_KEY',
  'TEMPORAL_TLS',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_CERT_DATA',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_DATA',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_TLS_SERVER_CA_CERT_DATA',
  'TEMPORAL_TLS_SERVER_NAME',
  'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION',
  'TEMPORAL_CODEC_ENDPOINT',
  'TEMPORAL_CODEC_AUTH',
  'TEMPORAL_PROFILE',
  'TEMPORAL_CONFIG_FILE',
] as const;

/** The standard OpenTelemetry variables the worker reads (worker/telemetry.ts); unset, telemetry is off. */
export const OTEL_ENV = {
  OTEL_SDK_DISABLED: '`true` turns all telemetry off',
  OTEL_SERVICE_NAME: 'the service name on spans and metrics (default `keel-worker`)',
  OTEL_TRACES_EXPORTER: '`otlp` or `console` to export traces (`otlp` is implied by an OTLP endpoint)',
  OTEL_EXPORTER_OTLP_ENDPOINT: 'the OTLP/HTTP collector, e.g. `http://otel-collector:4318`',
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'the OTLP/HTTP traces URL, if not `<endpoint>/v1/traces`',
  OTEL_METRICS_EXPORTER: '`prometheus` to serve Keel\'s metrics (and the Temporal runtime\'s on the next port)',
  OTEL_EXPORTER_PROMETHEUS_HOST: 'address the metrics endpoint binds (default `0.0.0.0`)',
  OTEL_EXPORTER_PROMETHEUS_PORT: 'port of Keel\'s `/metrics` (default 9464; the Temporal runtime\'s is the next one)',
} as const;

/** `TEMPORAL_GRPC_META_<NAME>`: a gRPC header sent with every call (also envconfig). */
export const TEMPORAL_GRPC_META_PREFIX = 'TEMPORAL_GRPC_META_';

/** Keel's own settings, with what each one means. */
export const KEEL_WORKER_ENV = {
  KEEL_TASK_QUEUE: 'the task queue the worker polls (default `keel`)',
  ANTHROPIC_API_KEY: 'the key for Claude; read inside the model activity only',
  ANTHROPIC_BASE_URL: 'another Messages API endpoint, e.g. the local stand-in',
  KEEL_MODEL_PRICES: 'a JSON or YAML file extending the per-model price table',
  KEEL_MCP_CONFIG: 'a JSON or YAML file listing MCP servers',
  KEEL_STORE_URL: 'the conversation store shared by the fleet: `postgres://user:password@host:5432/db` (unset: a directory, KEEL_STORE_DIR)',
  KEEL_STORE_DIR: 'where conversation segments are stored when KEEL_STORE_URL is unset; workers on several hosts must share it',
  KEEL_WORKSPACE_HOST: "this host's name when its workspaces are on its own disk (not shared): the worker also serves their tool calls on `<task queue>@<name>`, and clients on this host start sessions with `workspaceHost` set to it",
  KEEL_SANDBOX_READ: 'extra host paths (colon-separated) that sandboxed commands may read, e.g. a toolchain outside /usr',
  KEEL_SANDBOX_FORBID: 'endpoints (host:port, comma-separated) no network grant reaches, besides private and loopback addresses, the Temporal server and the Keel API',
  KEEL_RUN_DIR: "where records of running commands are kept (default: a private directory of the worker's user under the system temp dir)",
  KEEL_SHUTDOWN_GRACE: 'how long a stopping worker lets running activities finish before cancelling them (default `30s`; `0` cancels at once)',
  KEEL_TEMPORAL_WAIT_MS: 'how long a starting worker waits for its Temporal server, one line a try (default 6 h; `0`: one try)',
  KEEL_REPAIR_SWEEP_SECONDS: 'how often the worker looks for runs of its queue that the Temporal SDK cannot replay, to repair them (default `30`; `0`: never; see docs/deployment.md)',
  KEEL_WORKFLOW_CACHE: 'how many workflows the worker keeps cached: a count (`2000`) or a memory budget (`1.5GiB`) at 512 KiB per session; `0` turns the cache off (default: a 1 GiB budget, or a third of the V8 heap limit if smaller)',
  KEEL_DEPLOYMENT_NAME: 'the Temporal Worker Deployment this worker belongs to: set, the worker is versioned (sessions and goals stay on the build they started on and move to a new one when they continue as new; docs/deployment.md, "Versions and upgrades"); unset, unversioned as before',
  KEEL_BUILD_ID: 'with KEEL_DEPLOYMENT_NAME: this build\'s id (default: derived from the workflow bundle\'s hash)',
  KEEL_WORKFLOW_BUNDLE: 'a prebuilt workflow bundle to run (default: dist/workflow-bundle.js when compiled, else workflows/ bundled at start)',
  KEEL_ENCRYPTION_KEYS: 'payload encryption keys, `id:base64,…`, newest first (off when unset; see docs/deployment.md)',
  KEEL_ENCRYPTION_KEY_FILE: 'a file with the encryption keys, one `id:base64` a line (instead of KEEL_ENCRYPTION_KEYS)',
  KEEL_APPROVER_KEY: "the key (base64, ≥ 32 bytes) that proves an approval came through Keel's API or CLI; workers and `keel serve` must share it (default: `<config dir>/approver.key`, created on first use)",
  KEEL_CONFIG_DIR: "Keel's per-user settings (API token hashes, the approver key; default `~/.config/keel`)",
  XDG_CONFIG_HOME: 'the base of the default KEEL_CONFIG_DIR (`$XDG_CONFIG_HOME/keel`)',
} as const;

export type KeelWorkerEnvName = keyof typeof KEEL_WORKER_ENV;

/** Every variable name a worker reads (besides TEMPORAL_GRPC_META_*). */
export const WORKER_ENV: readonly string[] = [...TEMPORAL_CLIENT_ENV, ...(Object.keys(KEEL_WORKER_ENV) as KeelWorkerEnvName[]), ...Object.keys(OTEL_ENV)];

/** The value of one of Keel's own settings, blank treated as unset. */
export function keelEnv(env: NodeJS.ProcessEnv, name: KeelWorkerEnvName): string | undefined {
  return env[name] || undefined;
}
