// Files in a workspace that grant or run things later, outside any sandbox: Keel's own
// state (`.keel/`, at any depth: a nested policy file is read by the next session started
// there) and git's (`.git/`, at any depth: `core.fsmonitor`, hooks and filters run on the
// human's next `git status`). Pure rules on workspace-relative posix paths, shared by the
// policy (what the model asks for) and the tools (what a path really resolves to).

/** Directory names no file tool may write into, wherever they appear. */
export const PROTECTED_DIRS = ['.keel', '.git'] as const;
export type ProtectedDir = (typeof PROTECTED_DIRS)[number];

/** The one part of `.keel/` the agent may read: truncated tool output of its workspace. */
const READABLE_KEEL = ['.keel', 'artifacts'] as const;

function segmentsOf(rel: string): string[] {
  return rel.split('/').filter((s) => s !== '' && s !== '.');
}

/** The protected directory a workspace-relative path lies in or names (any depth), if any. */
export function protectedDirOf(rel: string): ProtectedDir | undefined {
  for (const segment of segmentsOf(rel)) {
    if ((PROTECTED_DIRS as readonly string[]).includes(segment)) return segment as ProtectedDir;
  }
  return undefined;
}

/**
 * Whether the agent may read a path: `.git/` may be read (it grants nothing by being
 * read); `.keel/` holds other sessions' conversations and records, so only the
 * workspace's own `.keel/artifacts/` (where a cut tool output is saved for it) is open.
 */
export function agentMayRead(rel: string): boolean {
  const segments = segmentsOf(rel);
  const keelAt = segments.indexOf('.keel');
  if (keelAt < 0) return true;
  if (keelAt !== 0 || segments[1] !== READABLE_KEEL[1]) return false;
  return !segments.slice(1).includes('.keel');
}

/**
 * Files outside `.git/` and `.keel/` that a tool or the human's editor runs later, outside
 * the sandbox. They are ordinary project files (an agent adding a dependency edits
 * package.json), so writing them is not refused: it always asks the human, with the
 * reason, whatever the mode (headless: denied unless headless.ask is "allow").
 */
export const RUNS_LATER: readonly { glob: RegExp; why: string }[] = [
  { glob: /(^|\/)package\.json$/, why: 'its "scripts" run on the next npm test / npm install, outside the sandbox when a human runs them' },
  { glob: /(^|\/)\.envrc$/, why: 'direnv runs it when a shell enters the directory' },
  { glob: /(^|\/)\.vscode\/(tasks|launch|settings)\.json$/, why: 'VS Code runs its tasks and settings (e.g. a terminal profile) when the folder is opened' },
  { glob: /(^|\/)\.husky\//, why: 'husky installs it as a git hook' },
  { glob: /(^|\/)\.pre-commit-config\.ya?ml$/, why: 'pre-commit runs what it names on the next git commit' },
  { glob: /(^|\/)\.github\/workflows\//, why: 'CI runs it with the repository\'s secrets on the next push' },
  { glob: /(^|\/)\.gitmodules$/, why: 'git fetches and checks out what it names' },
  { glob: /(^|\/)\.gitattributes$/, why: 'it selects filter and diff drivers git runs' },
];

/** Why writing a path needs a human even when the mode would allow it, or undefined. */
export function runsLaterReason(rel: string): string | undefined {
  const hit = RUNS_LATER.find((entry) => entry.glob.test(rel));
  return hit ? `${rel}: ${hit.why}` : undefined;
}
