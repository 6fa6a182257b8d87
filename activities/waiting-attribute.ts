// Whether this worker's Temporal namespace has the KeelWaiting search attribute registered
// (workflows/waiting-attribute.ts asks once per run, when it first waits). A workflow that
// upserts an attribute the server does not know has its workflow task failed, again and
// again: a server set up before KeelWaiting existed must not stall Keel's runs, so they
// write it only where it is registered. Answered from the server, cached a minute per
// namespace (a fleet-wide outage makes many runs ask at once).
import { Context } from '@temporalio/activity';
import { KeelWaiting } from '../workflows/search-attributes';

const CACHE_MS = 60_000;

export function createWaitingAttributeActivities() {
  const known = new Map<string, { registered: boolean; at: number }>();
  return {
    async waitingAttributeRegistered(): Promise<boolean> {
      const context = Context.current();
      const namespace = context.info.namespace;
      const cached = known.get(namespace);
      if (cached !== undefined && Date.now() - cached.at < CACHE_MS) return cached.registered;
      const { customAttributes } = await context.client.connection.operatorService.listSearchAttributes({ namespace });
      const registered = Object.hasOwn(customAttributes ?? {}, KeelWaiting.name);
      known.set(namespace, { registered, at: Date.now() });
      return registered;
    },
  };
}
