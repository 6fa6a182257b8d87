// A zod schema built on first use, once per module instance, and shareable between workflows.
//
// Why: the Temporal SDK evaluates a workflow's modules anew for every workflow it creates or
// replays (each has its own module cache), so a schema built at module level cost every
// cached session its construction time and its heap (≈ 2 MiB for all of Keel's). Two things
// fix that (docs/performance.md, "Schemas and tables once per worker"):
// - lazily: a schema is built the first time something parses, composes or converts it, so a
//   workflow builds only the schemas it uses;
// - once per worker: the modules of machines/ and the schema modules are `preloadModules` of
//   the workflow bundle (worker/workflow-bundle.ts), evaluated once per worker thread and
//   shared by every workflow. The SDK deep-freezes what shared modules export, and a frozen
//   zod schema cannot parse (zod installs its methods on the instance at first use). The
//   stand-in returned here refuses to be frozen and shows no keys, so the freeze never reaches
//   the schema it builds; the schema lives in a closure, unfrozen.
//
// The stand-in forwards everything to the schema (property reads, `in`, the prototype), so
// every caller — parse, composition into other schemas, z.toJSONSchema, z.infer, OpenAPI —
// uses it as the schema itself. Building it is pure (no clock, no randomness), so when it is
// built cannot change what a workflow does.
export function lazySchema<T extends object>(build: () => T): T {
  let built: T | undefined;
  const schema = (): T => (built ??= build());
  return new Proxy(Object.create(null) as T, {
    get: (_, key) => Reflect.get(schema(), key),
    has: (_, key) => Reflect.has(schema(), key),
    set: (_, key, value) => Reflect.set(schema(), key, value),
    getPrototypeOf: () => Object.getPrototypeOf(schema()) as object | null,
    // Not frozen, not sealed: the shared-module freeze stops here (reusable-vm.js catches it).
    preventExtensions: () => false,
  });
}

/**
 * A value built on first use, for what is not a schema but costs as much: the shapes several
 * schemas spread (`...common()`), a tool's JSON schema. Memoised like lazySchema; callers
 * must not mutate what it returns (it may be shared between workflows, frozen).
 */
export function once<T>(build: () => T): () => T {
  let built: T | undefined;
  let done = false;
  return () => {
    if (!done) {
      built = build();
      done = true;
    }
    return built as T;
  };
}
