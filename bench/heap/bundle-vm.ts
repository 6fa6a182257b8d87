// A workflow bundle run as the SDK runs it with its reusable V8 context, without Temporal:
// one vm context, webpack's module cache routed through the SDK's proxy (shared until a
// workflow exists, then the workflow's own: @temporalio/worker lib/workflow/reusable-vm.js),
// the bundle's `preloadModules` evaluated into the shared cache. bench/heap/modules.ts
// measures what each workflow then evaluates; test/integration/shared-modules.test.ts checks
// what the shared modules export and that they still work once frozen.
import vm from 'node:vm';

interface BundleContext {
  __TEMPORAL__: { importWorkflows(): object; importInterceptors(): unknown[]; preloadModules?: () => void };
  __TEMPORAL_ACTIVATOR__?: { moduleCache: Map<string, unknown>; info: { unsafe: { isReplayingHistoryEvents: boolean } } };
}

export interface BundleVm {
  context: BundleContext;
  /** The shared module cache after preloading: module id → webpack's module record (`{ exports }`). */
  shared: Map<string, { exports: unknown }>;
  /** What the SDK does for each new workflow: a module cache of its own, the interceptors and workflows imported into it. */
  importAsWorkflow: () => Map<string, unknown>;
}

/** Runs `code` (a workflow bundle) in a fresh context and preloads its shared modules. */
export function runBundle(code: string, globals: Record<string, unknown> = {}): BundleVm {
  const context = vm.createContext({}, { microtaskMode: 'afterEvaluate' }) as unknown as BundleContext;
  const shared = new Map<string, { exports: unknown }>();
  Object.defineProperty(context, '__webpack_module_cache__', {
    value: new Proxy(
      {},
      {
        get: (_, p: string) => shared.get(p) ?? context.__TEMPORAL_ACTIVATOR__?.moduleCache.get(p),
        set: (_, p: string, value) => {
          if (context.__TEMPORAL_ACTIVATOR__) context.__TEMPORAL_ACTIVATOR__.moduleCache.set(p, value);
          else shared.set(p, value as { exports: unknown });
          return true;
        },
      },
    ),
  });
  Object.assign(context, { TextEncoder, TextDecoder, URL, URLSearchParams, AbortController, console }, globals);
  new vm.Script(code, { filename: 'workflow-bundle.js' }).runInContext(context);
  context.__TEMPORAL__.preloadModules?.();
  const importAsWorkflow = () => {
    context.__TEMPORAL_ACTIVATOR__ = { moduleCache: new Map(), info: { unsafe: { isReplayingHistoryEvents: true } } };
    try {
      context.__TEMPORAL__.importInterceptors();
      context.__TEMPORAL__.importWorkflows();
      return context.__TEMPORAL_ACTIVATOR__.moduleCache;
    } finally {
      delete context.__TEMPORAL_ACTIVATOR__;
    }
  };
  return { context, shared, importAsWorkflow };
}

/**
 * `Object.freeze` over everything reachable by own properties, as the SDK freezes the shared
 * modules once they are loaded (reusable-vm.js `deepFreeze`: the same walk, getters read,
 * what cannot be frozen skipped).
 */
export function freezeAsTheSdkDoes(object: unknown, visited = new WeakSet<object>()): void {
  if (object === null || (typeof object !== 'object' && typeof object !== 'function') || visited.has(object)) return;
  visited.add(object);
  if (Object.isFrozen(object)) return;
  if (typeof object === 'object') {
    for (const key of Reflect.ownKeys(object)) {
      try {
        freezeAsTheSdkDoes((object as Record<PropertyKey, unknown>)[key], visited);
      } catch {
        // The SDK ignores what cannot be frozen, as here.
      }
    }
  }
  Object.freeze(object);
}
