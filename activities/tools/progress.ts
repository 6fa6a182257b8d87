// Progress of a long read (read_file, grep) for the activity's heartbeat details: how
// many bytes and files so far. Reported at most every PROGRESS_EVERY_MS: a grep reads a
// megabyte chunk in a millisecond, and the heartbeat needs only the latest figure.
import { type ToolContext } from './context';

const PROGRESS_EVERY_MS = 250;

export interface ReadProgress {
  tool: 'read_file' | 'grep';
  bytes: number;
  files: number;
}

export function progressReporter(ctx: ToolContext, tool: ReadProgress['tool'], snapshot: () => { bytes: number; files: number }): () => void {
  let last = 0;
  return () => {
    const now = Date.now();
    if (now - last < PROGRESS_EVERY_MS) return;
    last = now;
    const { bytes, files } = snapshot();
    const details: ReadProgress = { tool, bytes, files };
    ctx.progress(details);
  };
}
