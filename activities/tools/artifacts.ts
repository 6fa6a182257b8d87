// Large output never enters workflow history: beyond the cap, the model gets the
// start and the end with a note of how much was cut, and the whole output is saved
// under .keel/artifacts/ in the workspace, where read_file and grep can reach it.
import { createHash } from 'node:crypto';
import { type Workspace, writeFileInside, KEEL_DIR } from './workspace';
import { type ToolResult } from './result';

export const ARTIFACT_DIR = `${KEEL_DIR}/artifacts`;

/** Default cap on what one tool result carries to the model. */
export const DEFAULT_OUTPUT_CAP_BYTES = 30_000;

/** A stable artifact name for one tool call: a retry overwrites, it does not pile up. */
export function artifactPath(callKey: string, label: string): string {
  const digest = createHash('sha256').update(callKey).digest('hex').slice(0, 16);
  return `${ARTIFACT_DIR}/${label.replace(/[^A-Za-z0-9_-]/g, '_')}-${digest}.txt`;
}

export async function saveArtifact(ws: Workspace, rel: string, content: Buffer | string): Promise<string> {
  const written = await writeFileInside(ws, rel, content, { allowKeelDir: true });
  return written.rel;
}

/**
 * Keeps a result within the cap. Head and tail both survive: the start says what ran,
 * the end usually says how it ended.
 */
export async function capResult(
  ws: Workspace,
  result: ToolResult,
  options: { capBytes: number; callKey: string; label: string; full?: Buffer },
): Promise<ToolResult> {
  const bytes = Buffer.from(result.content);
  // A tool that saved its own artifact has already cut its output to size.
  if (bytes.length <= options.capBytes || result.artifact !== undefined) return result;
  const rel = await saveArtifact(ws, artifactPath(options.callKey, options.label), options.full ?? bytes);
  // What the tool did (facts, its own timeout) is not part of the text and survives the cut.
  return {
    ...truncateForModel(bytes, options.capBytes, rel),
    is_error: result.is_error,
    ...(result.timed_out ? { timed_out: true as const } : {}),
    ...(result.facts !== undefined ? { facts: result.facts } : {}),
  };
}

export function truncateForModel(bytes: Buffer, capBytes: number, artifact: string, totalBytes = bytes.length): ToolResult {
  const headBytes = Math.floor(capBytes * 0.4);
  const tailBytes = capBytes - headBytes;
  const head = utf8Prefix(bytes, headBytes);
  const tail = utf8Suffix(bytes, tailBytes);
  const cut = totalBytes - head.length - tail.length;
  const note =
    `\n\n[… ${cut.toLocaleString('en-US')} of ${totalBytes.toLocaleString('en-US')} bytes cut here. ` +
    `The full output is saved at ${artifact}; read it with read_file (offset/limit) or search it with grep.]\n\n`;
  return {
    content: head.toString('utf8') + note + tail.toString('utf8'),
    is_error: false,
    artifact,
    truncated_bytes: cut,
  };
}

/** The longest prefix of at most `max` bytes that does not split a UTF-8 character. */
function utf8Prefix(bytes: Buffer, max: number): Buffer {
  let end = Math.min(max, bytes.length);
  while (end > 0 && end < bytes.length && ((bytes[end] ?? 0) & 0xc0) === 0x80) end -= 1;
  return bytes.subarray(0, end);
}

function utf8Suffix(bytes: Buffer, max: number): Buffer {
  let start = Math.max(0, bytes.length - max);
  while (start < bytes.length && ((bytes[start] ?? 0) & 0xc0) === 0x80) start += 1;
  return bytes.subarray(start);
}
