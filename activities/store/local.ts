// The local-directory backend: one file per object under a directory on the worker's disk
// (the embedded default). Segments keep the layout stores have always had
// (`segments/ab/<hash>.json`), so existing stores read as they are. Several hosts can use
// it only through a shared file system (NFS, EFS); otherwise use the Postgres backend.
import { link, mkdir, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { IDENTITY_KEY, type ObjectStore } from './interface';

export class LocalDirectoryStore implements ObjectStore {
  readonly kind = 'local' as const;

  constructor(readonly where: string) {}

  private file(key: string): string {
    if (key === IDENTITY_KEY) return path.join(this.where, 'keel-store.json');
    const segment = /^segments\/([0-9a-f]{64})$/.exec(key);
    if (segment) return path.join(this.where, 'segments', segment[1]!.slice(0, 2), `${segment[1]}.json`);
    // Workspace checkpoints (activities/workspace-checkpoint.ts): manifests, file blobs and packs of small files.
    const checkpoint = /^(checkpoints|blobs|packs)\/([0-9a-f]{64})$/.exec(key);
    if (checkpoint) return path.join(this.where, checkpoint[1]!, checkpoint[2]!.slice(0, 2), checkpoint[2]!);
    throw new Error(`not a key of the conversation store: ${JSON.stringify(key)}`);
  }

  async get(key: string): Promise<Buffer | null> {
    try {
      return await readFile(this.file(key));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  async has(key: string): Promise<boolean> {
    try {
      await stat(this.file(key));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw error;
    }
  }

  async putIfAbsent(key: string, body: Buffer): Promise<void> {
    const file = this.file(key);
    // Write a temporary file, then link it to its name: a reader never sees half an object,
    // and link (unlike rename) never replaces an object another writer made first.
    const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    try {
      try {
        await writeFile(tmp, body, { flag: 'wx' });
      } catch (error) {
        // Directories are made when a write finds them missing, not before every write.
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        await this.mustHaveHome();
        await makeDirectory(path.dirname(file));
        await writeFile(tmp, body, { flag: 'wx' });
      }
      await link(tmp, file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      // A full disk or a failed link must not leave temporary files behind.
      await unlink(tmp).catch(() => {});
    }
  }

  async close(): Promise<void> {}

  /**
   * The store makes its own directory and the one holding it (`.keel` in a workspace), never
   * more: the default store lives in `<workspace>/.keel/store`, and `mkdir -p` from there
   * re-created a deleted workspace empty, where the agent then worked on nothing.
   */
  private async mustHaveHome(): Promise<void> {
    const home = path.dirname(path.dirname(this.where));
    if (await stat(home).then(() => true, () => false)) return;
    throw Object.assign(new Error(`${home}, which holds the store, is gone (deleted or unmounted); a workspace is not re-created empty: restore it, or move the run to a host that has it`), {
      code: 'workspace_gone',
    });
  }
}

/**
 * mkdir -p that reports the real cause: Node's recursive mkdir says ENOENT when a parent
 * cannot be created on a read-only file system; creating the first missing level alone
 * gives EROFS (or EACCES, ENOSPC) instead.
 */
async function makeDirectory(dir: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    let missing = dir;
    for (let parent = path.dirname(missing); parent !== missing; missing = parent, parent = path.dirname(parent)) {
      if (await stat(parent).then(() => true, () => false)) break;
    }
    await mkdir(missing); // throws the cause
    throw error;
  }
}
