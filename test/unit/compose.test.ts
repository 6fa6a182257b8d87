// No Docker engine runs where the tests run, so `docker compose config` cannot check the
// deployment: this test reads docker-compose.yml, the Dockerfile and .dockerignore and
// holds them to what the code needs — services, pinned images, ports, start order, health
// checks, volumes, the search attributes, and the worker's environment against the
// variables the worker really reads (shared/env.ts, itself checked against the code).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { KEEL_WORKER_ENV, OTEL_ENV, TEMPORAL_CLIENT_ENV, TEMPORAL_GRPC_META_PREFIX, WORKER_ENV } from '../../shared/env';
import { searchAttributeFlags } from '../../worker/search-attributes';

const root = path.resolve(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

interface Healthcheck {
  test: string | string[];
  interval?: string;
  retries?: number;
}
interface Service {
  image?: string;
  build?: { context: string; dockerfile?: string };
  container_name?: string;
  depends_on?: Record<string, { condition: string }>;
  environment?: Record<string, string | null>;
  ports?: string[];
  volumes?: string[];
  healthcheck?: Healthcheck;
  entrypoint?: string[];
  command?: string[];
  restart?: string;
  init?: boolean;
  profiles?: string[];
}
interface Compose {
  name?: string;
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

const compose = parseYaml(read('docker-compose.yml')) as Compose;
const services = compose.services;
const service = (name: string): Service => {
  const found = services[name];
  if (!found) throw new Error(`docker-compose.yml has no service ${name}`);
  return found;
};
const workerEnv = service('worker').environment ?? {};

/** `${VAR:-default}` → default; a plain value as it is. */
const defaultOf = (value: string | null | undefined) => value?.replace(/^\$\{[A-Z_]+:-(.*)\}$/, '$1');

// ---- the Dockerfile, as instructions ----------------------------------------------------
const dockerfile = read('Dockerfile')
  .replace(/\\\n/g, ' ')
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line && !line.startsWith('#'));
const instructions = (keyword: string) => dockerfile.filter((line) => line.toUpperCase().startsWith(`${keyword} `));
const runtimeStage = dockerfile.slice(dockerfile.findLastIndex((line) => /^FROM /i.test(line)));
/** The lines of the stage named `name` (`FROM … AS name`). */
function runtimeStageOf(name: string): string[] {
  const start = dockerfile.findIndex((line) => new RegExp(`^FROM .* AS ${name}$`, 'i').test(line));
  const end = dockerfile.findIndex((line, i) => i > start && /^FROM /i.test(line));
  return dockerfile.slice(start, end === -1 ? undefined : end);
}

describe('docker-compose.yml', () => {
  it('defines PostgreSQL, Temporal, the search-attribute job, the Web UI, the worker and the console', () => {
    expect(Object.keys(services).sort()).toEqual(['console', 'grafana', 'jaeger', 'postgresql', 'prometheus', 'search-attributes', 'temporal', 'ui', 'worker']);
    // Telemetry backends start only with `--profile observability`.
    for (const name of ['jaeger', 'prometheus', 'grafana']) expect(services[name]?.profiles, name).toEqual(['observability']);
    expect(service('temporal').image).toMatch(/^temporalio\/auto-setup:/);
    expect(service('search-attributes').image).toMatch(/^temporalio\/admin-tools:/);
    expect(service('ui').image).toMatch(/^temporalio\/ui:/);
    expect(service('postgresql').image).toMatch(/^postgres:/);
    expect(service('worker').build).toMatchObject({ context: '.', dockerfile: 'Dockerfile' });
  });

  it('pins every image to a version (no `latest`, no bare name)', () => {
    for (const [name, s] of Object.entries(services)) {
      expect(s.image, name).toMatch(/^[a-z0-9./-]+:v?\d+(\.\d+)+[\w.-]*$/);
      expect(s.image, name).not.toMatch(/latest/);
    }
    // admin-tools carries the server's version: the two move together.
    const serverVersion = service('temporal').image?.split(':')[1];
    expect(service('search-attributes').image?.split(':')[1]).toMatch(new RegExp(`^${serverVersion?.replace(/\./g, '\\.')}-`));
  });

  it('points Temporal at PostgreSQL with the postgres12 driver and matching credentials', () => {
    const temporal = service('temporal').environment ?? {};
    const postgres = service('postgresql').environment ?? {};
    expect(temporal.DB).toBe('postgres12');
    expect(temporal.POSTGRES_SEEDS).toBe('postgresql');
    expect(temporal.DB_PORT).toBe('5432');
    expect(temporal.POSTGRES_USER).toBe(postgres.POSTGRES_USER);
    expect(temporal.POSTGRES_PWD).toBe(postgres.POSTGRES_PASSWORD);
  });

  it('publishes only the Temporal frontend (7233), the Web UI (8080) and, with the observability profile, Jaeger, Prometheus and Grafana', () => {
    expect(service('jaeger').ports).toEqual(['16686:16686']);
    expect(service('prometheus').ports).toEqual(['9090:9090']);
    expect(service('grafana').ports).toEqual(['3000:3000']);
    expect(service('temporal').ports).toEqual(['7233:7233']);
    expect(service('ui').ports).toEqual(['8080:8080']);
    expect(service('ui').environment?.TEMPORAL_ADDRESS).toBe('temporal:7233');
    for (const name of ['postgresql', 'search-attributes', 'worker']) expect(service(name).ports, name).toBeUndefined();
  });

  it('ships the console and API (keel serve) on 127.0.0.1:8280, from the worker image, with the workspace volume', () => {
    const console = service('console');
    expect(console.image).toBe(service('worker').image);
    expect(console.command).toEqual(['node', 'dist/server/serve.js']);
    expect(console.ports).toEqual(['127.0.0.1:8280:8280']);
    expect(console.environment).toMatchObject({ TEMPORAL_ADDRESS: 'temporal:7233', KEEL_SERVE_HOST: '0.0.0.0', KEEL_SERVE_WORKSPACE: '/workspace' });
    expect(console.volumes).toContain('workspace:/workspace');
    expect(read('scripts/build.ts')).toContain("'server/serve': 'server/serve-main.ts'");
  });

  it('sends traces only where a collector runs: none by default, Jaeger when the observability profile is asked for', () => {
    const env = service('worker').environment ?? {};
    // Unset in the shell: empty, so the worker exports no trace (Jaeger runs only under its profile).
    expect(env.OTEL_EXPORTER_OTLP_ENDPOINT).toBe('${OTEL_EXPORTER_OTLP_ENDPOINT:-}');
    expect(env.OTEL_TRACES_EXPORTER).toBe('${OTEL_TRACES_EXPORTER:-none}');
    expect(service('jaeger').profiles).toEqual(['observability']);
    expect(read('docs/deployment.md')).toContain('OTEL_TRACES_EXPORTER=otlp OTEL_EXPORTER_OTLP_ENDPOINT=http://jaeger:4318 docker compose --profile observability up -d');
  });

  it('starts in order: PostgreSQL healthy → Temporal healthy → search attributes registered → workers', () => {
    expect(service('temporal').depends_on).toEqual({ postgresql: { condition: 'service_healthy' } });
    expect(service('search-attributes').depends_on).toEqual({ temporal: { condition: 'service_healthy' } });
    expect(service('ui').depends_on).toEqual({ temporal: { condition: 'service_healthy' } });
    expect(service('worker').depends_on).toEqual({
      postgresql: { condition: 'service_healthy' },
      temporal: { condition: 'service_healthy' },
      'search-attributes': { condition: 'service_completed_successfully' },
    });
    // Every dependency names a service that exists.
    for (const [name, s] of Object.entries(services)) {
      for (const dependency of Object.keys(s.depends_on ?? {})) expect(services, `${name} → ${dependency}`).toHaveProperty([dependency]);
    }
  });

  it('health-checks PostgreSQL and Temporal with real probes; the worker has its own in the image', () => {
    expect(service('postgresql').healthcheck?.test).toEqual(['CMD-SHELL', expect.stringMatching(/^pg_isready -U temporal/)]);
    expect(service('temporal').healthcheck?.test).toEqual(['CMD', 'temporal', 'operator', 'cluster', 'health', '--address', 'temporal:7233']);
    for (const name of ['postgresql', 'temporal']) expect(service(name).healthcheck?.retries, name).toBeGreaterThan(0);
    // The worker's probe comes from the Dockerfile's HEALTHCHECK; compose must not disable it.
    expect(service('worker').healthcheck).toBeUndefined();
  });

  it('registers exactly the search attributes the workflows set, with their types', () => {
    const job = service('search-attributes');
    const registered = (job.environment?.KEEL_SEARCH_ATTRIBUTES ?? '').split(/\s+/).filter(Boolean);
    const expected = searchAttributeFlags().filter((flag) => flag !== '--search-attribute');
    expect(registered).toEqual(expected);
    expect(registered).toEqual(['KeelKind=Keyword', 'KeelStatus=Keyword', 'KeelPendingApprovals=Int', 'KeelWorkspace=Keyword', 'KeelWaiting=Keyword']);
    const script = job.command?.join('\n') ?? '';
    expect(script).toMatch(/temporal operator search-attribute create --address "\$\$TEMPORAL_ADDRESS" --namespace "\$\$TEMPORAL_NAMESPACE"/);
    expect(job.environment?.TEMPORAL_ADDRESS).toBe('temporal:7233');
    // `$$` is compose's escape: a single `$` would be interpolated from the host, not the container.
    expect(script.replace(/\$\$/g, '')).not.toMatch(/\$/);
    expect(job.restart).toBe('no');
  });

  it('uses one namespace everywhere: the one auto-setup creates, the job registers in, and the workers poll', () => {
    const namespaces = [
      service('temporal').environment?.DEFAULT_NAMESPACE,
      service('search-attributes').environment?.TEMPORAL_NAMESPACE,
      workerEnv.TEMPORAL_NAMESPACE,
    ];
    expect(new Set(namespaces)).toEqual(new Set(['${TEMPORAL_NAMESPACE:-default}']));
  });

  it('keeps data in named volumes; every worker mounts the same workspace and shares the PostgreSQL conversation store', () => {
    expect(Object.keys(compose.volumes ?? {}).sort()).toEqual(['postgres-data', 'workspace']);
    expect(service('postgresql').volumes).toEqual(['postgres-data:/var/lib/postgresql/data']);
    const mounts = Object.fromEntries((service('worker').volumes ?? []).map((v) => v.split(':') as [string, string]).map(([from, to]) => [to, from]));
    expect(mounts['/workspace']).toBe('workspace');
    // The store is a database of the compose's own PostgreSQL, created on its first start.
    const postgres = service('postgresql').environment ?? {};
    expect(workerEnv.KEEL_STORE_URL).toBe(`postgres://${postgres.POSTGRES_USER}:${postgres.POSTGRES_PASSWORD}@postgresql:5432/${postgres.POSTGRES_DB}`);
    expect(workerEnv.KEEL_STORE_DIR).toBeNull();
    expect(service('worker').depends_on).toHaveProperty(['postgresql', 'condition'], 'service_healthy');
    for (const [name, s] of Object.entries(services)) {
      for (const volume of s.volumes ?? []) {
        const source = volume.split(':')[0] ?? '';
        if (!source.startsWith('.') && !source.startsWith('/')) expect(compose.volumes, `${name}: ${volume}`).toHaveProperty([source]);
      }
    }
  });

  it('lets the worker scale: no container name, no host ports, an init to reap child processes', () => {
    const worker = service('worker');
    expect(worker.container_name).toBeUndefined();
    expect(worker.ports).toBeUndefined();
    expect(worker.init).toBe(true);
    for (const s of Object.values(services)) expect(s.container_name).toBeUndefined();
  });

  it("sets only variables the worker reads, and every one of Keel's own", () => {
    for (const name of Object.keys(workerEnv)) expect(WORKER_ENV, name).toContain(name);
    expect(Object.keys(workerEnv).filter((name) => !name.startsWith('TEMPORAL_') && !name.startsWith('OTEL_')).sort()).toEqual(Object.keys(KEEL_WORKER_ENV).sort());
    expect(workerEnv.TEMPORAL_ADDRESS).toBe('temporal:7233');
    expect(defaultOf(workerEnv.KEEL_TASK_QUEUE)).toBe('keel');
  });

  it('never writes a secret into the file: the API key comes from the shell', () => {
    for (const name of ['ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', 'KEEL_MCP_CONFIG', 'KEEL_MODEL_PRICES']) {
      expect(workerEnv, name).toHaveProperty([name]);
      expect(workerEnv[name], name).toBeNull();
    }
    expect(read('docker-compose.yml')).not.toMatch(/sk-ant-/);
  });
});

describe('shared/env.ts', () => {
  /** Upper-case names read as `env.X`, `env['X']` or `keelEnv(env, 'X')` in these folders. */
  function namesReadIn(dirs: string[]): Set<string> {
    const names = new Set<string>();
    const visit = (file: string) => {
      if (statSync(file).isDirectory()) return readdirSync(file).forEach((entry) => visit(path.join(file, entry)));
      if (!file.endsWith('.ts')) return;
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/\benv(?:\?)?\.([A-Z][A-Z0-9_]+)|\benv\[['"]([A-Z][A-Z0-9_]+)['"]\]|keelEnv\(\w+, '([A-Z][A-Z0-9_]+)'\)/g)) {
        names.add((m[1] ?? m[2] ?? m[3]) as string);
      }
    };
    dirs.forEach((dir) => visit(path.join(root, dir)));
    return names;
  }

  it("lists exactly the Keel variables the worker's code reads", () => {
    // scripts/dev.ts and the tests read other variables; the worker process does not.
    const read = namesReadIn(['worker', 'shared', 'activities']);
    expect([...read].filter((name) => !name.startsWith('OTEL_')).sort()).toEqual(Object.keys(KEEL_WORKER_ENV).sort());
    expect([...read].filter((name) => name.startsWith('OTEL_')).sort()).toEqual(Object.keys(OTEL_ENV).sort());
  });

  it('lists exactly the Temporal variables @temporalio/envconfig reads', () => {
    const lib = path.join(root, 'node_modules/@temporalio/envconfig/lib');
    const names = new Set<string>();
    for (const file of readdirSync(lib).filter((f) => f.endsWith('.js'))) {
      for (const m of readFileSync(path.join(lib, file), 'utf8').matchAll(/TEMPORAL_[A-Z_]+/g)) names.add(m[0]);
    }
    expect([...names].sort()).toEqual([...TEMPORAL_CLIENT_ENV, TEMPORAL_GRPC_META_PREFIX].sort());
  });

  it('is documented in the configuration page (docs/configuration.md)', () => {
    const readme = read('docs/configuration.md') + read('docs/reference.md');
    for (const name of [...Object.keys(KEEL_WORKER_ENV), ...Object.keys(OTEL_ENV)]) expect(readme, name).toContain(`\`${name}\``);
  });
});

describe('Dockerfile', () => {
  it('is multi-stage on a pinned Node 20 image', () => {
    const froms = instructions('FROM');
    expect(froms.length).toBeGreaterThanOrEqual(2);
    const image = instructions('ARG').find((line) => line.startsWith('ARG NODE_IMAGE='))?.split('=')[1];
    expect(image).toMatch(/^node:20\.\d+\.\d+-/);
    expect(froms.every((line) => line.startsWith('FROM ${NODE_IMAGE}'))).toBe(true);
  });

  it('installs from the lock file with npm ci, production dependencies only', () => {
    // The build stage installs everything to compile; the runtime gets production packages only.
    const install = runtimeStageOf('deps').find((line) => /^RUN /.test(line) && line.includes('npm ci'));
    expect(install).toMatch(/npm ci --omit=dev/);
    expect(runtimeStage.find((line) => line.includes('node_modules'))).toMatch(/--from=deps/);
    expect(instructions('COPY').some((line) => line.includes('package-lock.json'))).toBe(true);
  });

  it('runs as a non-root user, in its last stage', () => {
    const users = runtimeStage.filter((line) => /^USER /i.test(line)).map((line) => line.split(/\s+/)[1]);
    expect(users.length).toBeGreaterThan(0);
    expect(users.at(-1)).not.toMatch(/^(root|0)$/);
  });

  it('runs the compiled worker (`npm start` without npm) and health-checks it, with no TypeScript loader', () => {
    const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toBe('node dist/worker/main.js');
    expect(runtimeStage.filter((line) => /^CMD /i.test(line))).toEqual(['CMD ["node", "dist/worker/main.js"]']);
    expect(runtimeStage.find((line) => /^HEALTHCHECK /i.test(line))).toMatch(/CMD \["node", "dist\/worker\/healthcheck\.js"\]$/);
    expect(runtimeStage.join('\n')).not.toMatch(/tsx/);
    expect(instructions('RUN').some((line) => line.includes('npm run build'))).toBe(true);
  });

  /** Every file and package reached by relative imports from the entry points (type-only imports skipped: they are erased). */
  function reached(entries: string[]): { files: Set<string>; packages: Set<string> } {
    const files = new Set<string>();
    const packages = new Set<string>();
    const queue = [...entries];
    while (queue.length > 0) {
      const file = queue.pop() as string;
      if (files.has(file)) continue;
      files.add(file);
      const code = read(file).replace(/^import type [^;]*;$/gm, '');
      for (const m of code.matchAll(/[\s}]from\s+'([^']+)'|\bimport\s*\(\s*'([^']+)'|^import\s+'([^']+)'/gm)) {
        const spec = (m[1] ?? m[2] ?? m[3]) as string;
        if (spec.startsWith('.')) {
          const target = path.relative(root, path.resolve(root, path.dirname(file), spec));
          // A folder (machines/policy/, machines/turn/) is imported through its index.ts.
          queue.push(existsSync(path.join(root, `${target}.ts`)) ? `${target}.ts` : existsSync(path.join(root, `${target}.tsx`)) ? `${target}.tsx` : existsSync(path.join(root, target, 'index.ts')) ? `${target}/index.ts` : target);
        } else if (!spec.startsWith('node:') && !builtinModules.includes(spec)) {
          packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] as string));
        }
      }
    }
    return { files, packages };
  }
  const copiedPaths = () =>
    new Set(
      dockerfile
        .filter((line) => /^COPY /i.test(line) && !line.includes('--from'))
        .flatMap((line) => line.split(/\s+/).slice(1, -1).filter((part) => !part.startsWith('--'))),
    );

  it('builds from every source folder the worker and the console server load, and they need only production packages', () => {
    const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string> };
    const copied = copiedPaths();
    // The worker, its health check, the workflow code it bundles when it starts, and the
    // console and API server (the compose service `console`, dist/server/serve.js).
    const { files, packages } = reached(['worker/main.ts', 'worker/healthcheck.ts', 'workflows/index.ts', 'server/serve-main.ts']);
    const folders = new Set([...files].map((file) => file.split('/')[0] as string));
    expect([...folders].sort()).toEqual(['activities', 'client', 'machines', 'server', 'shared', 'worker', 'workflows']);
    for (const folder of folders) expect(copied, folder).toContain(folder);
    const dependencies = Object.keys(pkg.dependencies);
    for (const name of packages) expect(dependencies, name).toContain(name);
  });

  it('the build stage has every file `npm run build` reads (the console among them)', () => {
    const copied = [...copiedPaths()];
    // The console's page too: esbuild bundles it from its entry, which imports @keel/react's sources.
    const { files } = reached(['scripts/build.ts', 'server/console/src/main.tsx']);
    // The console's page and stylesheet, which the build copies beside the server.
    for (const file of [...files, 'server/console/index.html', 'server/console/style.css', 'server/console/src/main.tsx']) {
      expect(copied.some((c) => file === c || file.startsWith(`${c}/`)), file).toBe(true);
    }
  });

  it('.dockerignore keeps state, secrets and test material out, and what the image copies in', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith('#'));
    for (const name of ['node_modules', '.git', '.keel', 'test', '.env']) expect(ignored, name).toContain(name);
    const copiedFromContext = dockerfile
      .filter((line) => /^COPY /i.test(line) && !line.includes('--from'))
      .flatMap((line) => line.split(/\s+/).slice(1, -1).filter((part) => !part.startsWith('--')));
    for (const name of copiedFromContext) {
      expect(ignored, name).not.toContain(name);
      expect(existsSync(path.join(root, name)), name).toBe(true);
    }
  });
});
