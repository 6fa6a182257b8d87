// A real PostgreSQL server for a test: its own cluster (initdb) in a temp directory, on a
// free port, started with pg_ctl and removed afterwards. Debian's `postgresql` package
// (scripts/system-packages.txt) puts the binaries under /usr/lib/postgresql/<version>/bin.
// initdb refuses to run as root, so as root the cluster belongs to the `postgres` user the
// package creates and every server command runs as that user (runuser); as anyone else it
// is the caller's own.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startOnFreePort } from '../../worker/dev-server';

const run = promisify(execFile);

export interface TestPostgres {
  /** postgres://keel@127.0.0.1:<port>/<database> */
  url: string;
  port: number;
  /** A fresh database on the same server (each test its own). */
  createDatabase(name: string): Promise<string>;
  /** Runs SQL as the superuser. */
  sql(database: string, statement: string): Promise<string>;
  /** Stops the server (fast shutdown: connections are cut) and keeps its data, as an outage or a restart does. */
  halt(): Promise<void>;
  /** Starts the halted server again on the same port. */
  resume(): Promise<void>;
  stop(): Promise<void>;
}

/** The directory holding initdb and pg_ctl: the newest version installed, else PATH. */
export function postgresBinDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(path.join(root, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0] !== undefined) return path.join(root, versions[0], 'bin');
  }
  return null;
}

export async function startPostgres(): Promise<TestPostgres> {
  const bin = postgresBinDir();
  const tool = (name: string) => (bin ? path.join(bin, name) : name);
  const asRoot = process.getuid?.() === 0;
  // As root: the package's `postgres` user owns the cluster (initdb will not run as root).
  const as = async (file: string, args: string[]) => (asRoot ? run('runuser', ['-u', 'postgres', '--', file, ...args]) : run(file, args));
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-pg-'));
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']).catch(() => {
      throw new Error('the tests need the Debian package postgresql (its `postgres` user runs the test cluster): apt-get install postgresql');
    });
    const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
    await fs.chown(dir, Number(stdout.trim()), gid);
  }
  const data = path.join(dir, 'data');
  try {
    await as(tool('initdb'), ['-D', data, '-U', 'keel', '--auth=trust', '--no-sync', '-E', 'UTF8']);
  } catch (error) {
    throw new Error(`initdb failed (is the Debian package postgresql installed? binaries looked for in ${bin ?? 'PATH'}): ${(error as Error).message}`, { cause: error });
  }
  // Another test file's process can take the port before postgres binds it: then it starts on another.
  const log = path.join(dir, 'server.log');
  const options = (port: number) => `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`;
  const port = await startOnFreePort(
    async (port) => {
      // pg_ctl appends: a clash already logged must not be read again for a later failure.
      await fs.rm(log, { force: true });
      await as(tool('pg_ctl'), ['-D', data, '-l', log, '-o', options(port), '-w', '-t', '60', 'start']);
      return port;
    },
    async () => /Address already in use/i.test(await fs.readFile(log, 'utf8').catch(() => '')),
  );
  const url = (database: string) => `postgres://keel@127.0.0.1:${port}/${database}`;
  const sql = async (database: string, statement: string) => (await run('psql', ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', url(database), '-c', statement])).stdout.trim();
  return {
    url: url('postgres'),
    port,
    sql,
    async createDatabase(name) {
      await sql('postgres', `CREATE DATABASE "${name.replace(/"/g, '')}"`);
      return url(name);
    },
    async halt() {
      await as(tool('pg_ctl'), ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop']);
    },
    async resume() {
      await as(tool('pg_ctl'), ['-D', data, '-l', log, '-o', options(port), '-w', '-t', '60', 'start']);
    },
    async stop() {
      await as(tool('pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {});
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}
