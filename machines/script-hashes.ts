// The content hashes an approval is bound to (machines/script-binding.ts), in a file of its
// own so that the policy's schemas can name them without importing the command parsing.
import { z } from 'zod';
import { lazySchema } from './lazy-schema';

/** Workspace-relative path → `sha256:<hex>` of the file's content, at most 64 files. */
export const scriptHashesSchema = lazySchema(() => z.record(z.string().max(4096), z.string().regex(/^sha256:[0-9a-f]{64}$/)).refine((r) => Object.keys(r).length <= 64, 'at most 64 files'));
export type ScriptHashes = z.infer<typeof scriptHashesSchema>;
