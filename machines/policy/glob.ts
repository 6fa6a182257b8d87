// Glob matching (picomatch), safe to share between workflows.
//
// The workflow bundle evaluates the policy once per worker thread and every workflow on it
// shares it (worker/workflow-bundle.ts PRELOADED_WORKFLOW_MODULES); the SDK then freezes
// what every shared module exports, picomatch's modules too. picomatch's `constants` export
// holds RegExps with the g flag, and a g RegExp writes its `lastIndex` at every use: frozen,
// the next `replace` with one throws. picomatch's own modules copied them out of that object
// when they loaded, so each becomes a getter that hands out a fresh copy: the freeze then
// reaches only a copy nobody uses, and the RegExps picomatch uses stay as they were.
import picomatch from 'picomatch/posix';

const constants = picomatch.constants as unknown as Record<string, unknown>;
for (const [name, descriptor] of Object.entries(Object.getOwnPropertyDescriptors(constants))) {
  const value: unknown = descriptor.value;
  if (!(value instanceof RegExp) || !(value.global || value.sticky)) continue;
  Object.defineProperty(constants, name, { get: () => new RegExp(value.source, value.flags), enumerable: descriptor.enumerable, configurable: true });
}

/** Whether a workspace-relative path matches a (normalised) glob; dotfiles match like any file. */
export function globMatches(relativePath: string, glob: string): boolean {
  return picomatch.isMatch(relativePath, glob, { dot: true });
}
