// Idempotency records for tools that change files. A retry of the same tool call (same
// workflowId + activityId) finds the record and answers as the first attempt did, so an
// edit is never applied twice, even when the crash came between applying and answering.
import { createHash } from 'node:crypto';
import { KEEL_DIR, openExisting, ToolError, type Workspace, writeFileInside } from './workspace';

const LEDGER_DIR = `${KEEL_DIR}/state/applied`;

export interface LedgerRecord {
  tool: string;
  path: string;
  /** sha256 of the file before the change (absent when the file did not exist). */
  before?: string;
  /** sha256 of the file the change produces. */
  after: string;
  /** The answer given, once the change is applied. */
  result?: string;
}

function recordPath(callKey: string): string {
  return `${LEDGER_DIR}/${createHash('sha256').update(callKey).digest('hex').slice(0, 32)}.json`;
}

export function sha256(content: Buffer | string): string {
  return createHash('sha256').update(content).digest('hex');
}

export async function readRecord(ctx: { ws: Workspace; callKey: string }): Promise<LedgerRecord | undefined> {
  let opened;
  try {
    opened = await openExisting(ctx.ws, recordPath(ctx.callKey), 'read', { keelOwn: true });
  } catch (error) {
    if (error instanceof ToolError) return undefined;
    throw error;
  }
  try {
    return JSON.parse(await opened.handle.readFile('utf8')) as LedgerRecord;
  } catch {
    return undefined;
  } finally {
    await opened.handle.close();
  }
}

export async function writeRecord(ctx: { ws: Workspace; callKey: string }, record: LedgerRecord): Promise<void> {
  await writeFileInside(ctx.ws, recordPath(ctx.callKey), JSON.stringify(record), { allowKeelDir: true });
}
