// zod's global settings, fixed before anything is shared between workflows. zod sets its
// default locale and memoizer on the first schema it constructs, in an object it keeps on
// globalThis. The workflow bundle preloads this module first (worker/workflow-bundle.ts
// PRELOADED_WORKFLOW_MODULES): the SDK freezes what exists on globalThis once the preloaded
// modules have run, and a zod that set its defaults only later would throw writing them.
import { z } from 'zod';

// One container of each kind that sets a default (ZodType: locale; ZodObject/ZodArray: memoizer).
z.object({ settings: z.array(z.string()) });
