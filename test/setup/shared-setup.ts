// Both integration projects (`integration`, modules shared per fork, and
// `integration-isolated`) list the same global setups; vitest runs each project's setup in
// the one main process. What a setup starts is started once, for the first project that asks,
// and stopped after the last project's teardown: one dev server and one bundle per run.
// Each project loads this module afresh, so the registry lives on the process's global object.
type Started = Map<string, { value: Promise<unknown>; users: number; stop: () => Promise<void> }>;
const registry = globalThis as typeof globalThis & { __keelSharedSetup?: Started };
const started: Started = (registry.__keelSharedSetup ??= new Map() as Started);

/** Starts `name` once (`start` returns the value and how to stop it); returns the value and this project's teardown. */
export async function sharedOnce<T>(name: string, start: () => Promise<{ value: T; stop: () => Promise<void> }>): Promise<{ value: T; teardown: () => Promise<void> }> {
  let entry = started.get(name);
  if (!entry) {
    const pending = start();
    entry = { value: pending.then((s) => s.value), users: 0, stop: async () => (await pending).stop() };
    started.set(name, entry);
  }
  entry.users += 1;
  const value = (await entry.value) as T;
  const self = entry;
  return {
    value,
    async teardown() {
      self.users -= 1;
      if (self.users === 0) {
        started.delete(name);
        await self.stop();
      }
    },
  };
}
