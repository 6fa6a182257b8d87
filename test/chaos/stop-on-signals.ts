// Ctrl-C or SIGTERM for `npm run fuzz` / `npm run chaos`: the run is aborted and unwinds
// through its finally blocks (workers, stand-in, dev server stopped). Without a handler Node
// dies on the signal without its 'exit' hooks, and the dev server, in a process group of its
// own (worker/dev-server.ts), lived on. A second signal, or a cleanup that hangs, exits at
// once: the 'exit' hooks still kill the children.
const CLEANUP_MS = 60_000;

export function stopOnSignals(name: string): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const codes = { SIGINT: 130, SIGTERM: 143 } as const;
  const on = (sig: keyof typeof codes) => () => {
    process.exitCode = codes[sig];
    if (controller.signal.aborted) process.exit(codes[sig]);
    console.error(`${name}: ${sig}: stopping the run and what it started`);
    controller.abort(new Error(`${name}: stopped by ${sig}`));
    setTimeout(() => process.exit(codes[sig]), CLEANUP_MS).unref();
  };
  const handlers = { SIGINT: on('SIGINT'), SIGTERM: on('SIGTERM') };
  process.on('SIGINT', handlers.SIGINT);
  process.on('SIGTERM', handlers.SIGTERM);
  return {
    signal: controller.signal,
    dispose() {
      process.off('SIGINT', handlers.SIGINT);
      process.off('SIGTERM', handlers.SIGTERM);
    },
  };
}
