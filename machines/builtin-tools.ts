// The built-in tools as the model, the policy and the workflow see them: one spec each (name,
// description, input schema, kind, how a call runs). The policy's table of kinds is derived from
// this list (machines/policy/tool-kinds.ts), and so is the worker's registry, which binds each
// spec to its implementation (activities/tools/definitions.ts): a spec without an
// implementation, or an implementation without a spec, does not compile. Pure: workflow code
// and the policy import it; the schemas are built on first use (machines/lazy-schema.ts).
import { z } from 'zod';
import { lazySchema } from './lazy-schema';
import { type ActivityOptions, toolSpec } from './tool-spec';

/** The most a command may ask for (runCommandInput's timeout_seconds). */
export const MAX_COMMAND_TIMEOUT_SECONDS = 1800;

export const readFileInput = lazySchema(() =>
  z
    .object({
      path: z.string().min(1).describe('File path relative to the workspace root, e.g. "src/index.ts".'),
      offset: z.number().int().min(1).optional().describe('First line to return (1-based). Default 1.'),
      limit: z.number().int().min(1).max(5000).optional().describe('How many lines to return. Default 2000.'),
    })
    .strict(),
);
export type ReadFileInput = z.infer<typeof readFileInput>;
export const READ_FILE_DESCRIPTION =
  'Read a text file from the workspace. Returns the lines prefixed with their line numbers ' +
  '("   12\\tcontent"; the prefix is not part of the file). Reads up to 2000 lines; use offset and ' +
  'limit for other ranges of long files. Binary files are not shown. Paths are relative to the ' +
  'workspace root; truncated tool output saved under .keel/artifacts/ can be read with this tool.';

export const listDirInput = lazySchema(() =>
  z
    .object({
      path: z.string().optional().describe('Directory relative to the workspace root. Default "." (the root).'),
    })
    .strict(),
);
export type ListDirInput = z.infer<typeof listDirInput>;
export const LIST_DIR_DESCRIPTION =
  'List the entries of one directory of the workspace (not recursive): subdirectories end with "/", ' +
  'symlinks show their target inside the workspace (or that it is outside), files show their size. Names that are not valid UTF-8 show the odd bytes as \\xNN; ' +
  'pass them the same way in paths.';

export const globInput = lazySchema(() =>
  z
    .object({
      pattern: z.string().min(1).describe('Glob relative to path, e.g. "**/*.ts" or "src/*.{js,json}".'),
      path: z.string().optional().describe('Directory to search from, relative to the workspace root. Default ".".'),
    })
    .strict(),
);
export type GlobInput = z.infer<typeof globInput>;
export const GLOB_DESCRIPTION =
  'Find files in the workspace by glob pattern ("**/*.ts", "src/**/test_*.py"). Returns matching paths ' +
  'relative to the workspace root, sorted. Skips .git, .keel and node_modules unless the pattern starts with them.';

export const grepInput = lazySchema(() =>
  z
    .object({
      pattern: z.string().min(1).describe('JavaScript regular expression, e.g. "function\\\\s+main" or "TODO|FIXME".'),
      path: z.string().optional().describe('File or directory to search, relative to the workspace root. Default ".".'),
      glob: z.string().optional().describe('Only search files whose path (relative to path) matches this glob, e.g. "**/*.ts".'),
      ignore_case: z.boolean().optional().describe('Case-insensitive match. Default false.'),
      max_results: z.number().int().min(1).max(2000).optional().describe('Stop after this many matching lines. Default 200.'),
    })
    .strict(),
);
export type GrepInput = z.infer<typeof grepInput>;
export const GREP_DESCRIPTION =
  'Search the text files of the workspace for a regular expression (JavaScript syntax). Returns ' +
  '"path:line: text" for each matching line. Files of any size are read as a stream. Binary files, ' +
  'files with several hard links, .git, .keel and node_modules are skipped (search .keel/artifacts by passing it as path); ' +
  'the answer says when files with several hard links were skipped.';

export const writeFileInput = lazySchema(() =>
  z
    .object({
      path: z.string().min(1).describe('File path relative to the workspace root. Missing parent directories are created.'),
      content: z.string().describe('The complete new content of the file.'),
    })
    .strict(),
);
export type WriteFileInput = z.infer<typeof writeFileInput>;
export const WRITE_FILE_DESCRIPTION =
  'Create a file, or replace the whole content of an existing one, in the workspace. Prefer ' +
  'edit_file for changing part of an existing file. Paths are relative to the workspace root; ' +
  'the .keel/ directory is reserved.';

export const editFileInput = lazySchema(() =>
  z
    .object({
      path: z.string().min(1).describe('File path relative to the workspace root.'),
      old_string: z.string().min(1).describe('The exact text to replace, including whitespace and indentation (no line-number prefixes).'),
      new_string: z.string().describe('The text to put in its place.'),
      replace_all: z.boolean().optional().describe('Replace every occurrence instead of requiring exactly one. Default false.'),
    })
    .strict(),
);
export type EditFileInput = z.infer<typeof editFileInput>;
export const EDIT_FILE_DESCRIPTION =
  'Replace text in an existing file of the workspace. old_string must match the file exactly ' +
  '(whitespace included) and occur exactly once, unless replace_all is true; add surrounding ' +
  'lines to old_string to make it unique. Read the file first.';

export const runCommandInput = lazySchema(() =>
  z
    .object({
      command: z
        .union([z.string().min(1), z.array(z.string()).min(1)])
        .describe('A shell command line (run with /bin/sh -c), or an argv array run directly without a shell, e.g. ["npm", "test"].'),
      cwd: z.string().optional().describe('Working directory relative to the workspace root. Default ".".'),
      timeout_seconds: z.number().int().min(1).max(MAX_COMMAND_TIMEOUT_SECONDS).optional().describe('Kill the command after this many seconds. Default 120, at most 1800.'),
    })
    .strict(),
);
export type RunCommandInput = z.infer<typeof runCommandInput>;
export const RUN_COMMAND_DESCRIPTION =
  'Run a command in the workspace and return its combined stdout and stderr and its exit code. ' +
  'A non-zero exit code is reported as an error. There is no terminal and no stdin; do not start ' +
  'interactive programs or servers that never exit. The command and every process it starts are ' +
  'killed at the timeout. Long output is truncated (the middle is cut) and saved in full under .keel/artifacts/. ' +
  'The command runs at most once: it is not retried automatically. It runs in a sandbox: only the workspace ' +
  'is writable (.keel/ is not), system directories are read-only, other host files are not visible, /tmp is ' +
  'private and empty, HOME is /tmp/home, and the network is off unless the policy allows it.';

export const askUserInput = lazySchema(() =>
  z
    .object({
      question: z.string().min(1).describe('The question, complete enough to answer without other context.'),
      options: z.array(z.string().min(1)).max(10).optional().describe('Suggested answers, if the choice is between a few.'),
    })
    .strict(),
);
export type AskUserInput = z.infer<typeof askUserInput>;
export const ASK_USER_DESCRIPTION =
  'Ask the human a question and wait for the answer. Use it when you cannot proceed without a ' +
  'decision or information only they have; do not use it for things you can find out with the other tools.';

const fileRetry = { maximumAttempts: 3, initialInterval: 500, backoffCoefficient: 2, maximumInterval: 5_000 };

// Quick filesystem work: short timeouts, a few retries (they are idempotent).
const readActivity: ActivityOptions = { startToCloseTimeout: 60_000, heartbeatTimeout: 10_000, retry: fileRetry };
const writeActivity: ActivityOptions = { startToCloseTimeout: 30_000, heartbeatTimeout: 10_000, retry: fileRetry };
/**
 * A command runs at most once. Its own timeout (the input's timeout_seconds) ends it
 * first; startToClose is a backstop above the largest allowed. A short heartbeat
 * timeout is how a dead worker is noticed, and heartbeats are how cancellation arrives.
 */
const commandActivity: ActivityOptions = {
  startToCloseTimeout: (MAX_COMMAND_TIMEOUT_SECONDS + 60) * 1000,
  heartbeatTimeout: 5_000,
  retry: { maximumAttempts: 1 },
};

// read_file and list_dir are quick and bounded (one file, one directory): they run as local
// activities where they can. The walks (glob, grep) stay activities: they can run long, and
// heartbeat their progress and hear of a cancel that way.
export const readFileSpec = toolSpec({ name: 'read_file', description: READ_FILE_DESCRIPTION, input: readFileInput, kind: 'read', activity: readActivity, local: true });
export const listDirSpec = toolSpec({ name: 'list_dir', description: LIST_DIR_DESCRIPTION, input: listDirInput, kind: 'read', activity: readActivity, local: true });
export const globSpec = toolSpec({ name: 'glob', description: GLOB_DESCRIPTION, input: globInput, kind: 'read', activity: readActivity });
export const grepSpec = toolSpec({ name: 'grep', description: GREP_DESCRIPTION, input: grepInput, kind: 'read', activity: readActivity });
export const writeFileSpec = toolSpec({ name: 'write_file', description: WRITE_FILE_DESCRIPTION, input: writeFileInput, kind: 'write', activity: writeActivity });
export const editFileSpec = toolSpec({ name: 'edit_file', description: EDIT_FILE_DESCRIPTION, input: editFileInput, kind: 'write', activity: writeActivity });
export const runCommandSpec = toolSpec({ name: 'run_command', description: RUN_COMMAND_DESCRIPTION, input: runCommandInput, kind: 'execute', activity: commandActivity });
/** A person answers it: the workflow handles the call, no activity runs. */
export const askUserSpec = toolSpec({ name: 'ask_user', description: ASK_USER_DESCRIPTION, input: askUserInput, kind: 'interact', activity: undefined });

/** In the order the model is offered them. */
export const builtinToolSpecs = [readFileSpec, listDirSpec, globSpec, grepSpec, writeFileSpec, editFileSpec, runCommandSpec, askUserSpec] as const;

export type BuiltinToolSpec = (typeof builtinToolSpecs)[number];
export type BuiltinToolName = BuiltinToolSpec['name'];
