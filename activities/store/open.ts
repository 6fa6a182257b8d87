// Which conversation store a worker uses, from its configuration:
//   KEEL_STORE_URL=postgres://user:pass@host:5432/db   PostgreSQL, shared by the fleet
//   KEEL_STORE_DIR=/path                                a local (or NFS) directory
//   neither                                             the directory the workflow names
//                                                       (by default <workspace>/.keel/store)
// A URL of another scheme is a start-up error, never a silent fallback to the disk.
import path from 'node:path';
import type { ObjectStore } from './interface';
import { LocalDirectoryStore } from './local';
import { PostgresStore } from './postgres';

export type StoreConfig = { kind: 'postgres'; url: string } | { kind: 'local'; dir: string | null };

/** The worker's store setting; throws one line naming the variable when it is wrong. */
export function storeConfig(env: NodeJS.ProcessEnv = process.env): StoreConfig {
  const url = env.KEEL_STORE_URL?.trim();
  if (url) {
    if (/^postgres(ql)?:\/\//i.test(url)) return { kind: 'postgres', url };
    const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1] ?? url;
    throw new Error(`KEEL_STORE_URL: the conversation store "${scheme}" is not supported; use postgres://… or leave it unset for a directory (KEEL_STORE_DIR)`);
  }
  const dir = env.KEEL_STORE_DIR?.trim();
  return { kind: 'local', dir: dir ? path.resolve(dir) : null };
}

const open = new Map<string, ObjectStore>();

/**
 * The store for a request that names `requested` (a directory): the worker's configured
 * store wins over it. One instance per store and process (a Postgres pool is shared).
 */
export function openStore(requested: string, env: NodeJS.ProcessEnv = process.env): ObjectStore {
  const config = storeConfig(env);
  const key = config.kind === 'postgres' ? `pg\0${config.url}` : `dir\0${config.dir ?? path.resolve(requested)}`;
  let store = open.get(key);
  if (!store) {
    store = config.kind === 'postgres' ? new PostgresStore(config.url) : new LocalDirectoryStore(config.dir ?? path.resolve(requested));
    open.set(key, store);
  }
  return store;
}

/** The store the worker itself is configured with, or null when each workflow names its own directory. */
export function workerStore(env: NodeJS.ProcessEnv = process.env): ObjectStore | null {
  const config = storeConfig(env);
  if (config.kind === 'local' && config.dir === null) return null;
  return openStore(config.kind === 'local' ? config.dir! : '', env);
}

/** Closes every store this process opened (worker shutdown, tests). */
export async function closeStores(): Promise<void> {
  const stores = [...open.values()];
  open.clear();
  await Promise.allSettled(stores.map((s) => s.close()));
}
