// State that belongs to one workflow, in modules every workflow on a worker thread shares.
//
// The workflow bundle evaluates Keel's workflow modules once per worker thread
// (worker/workflow-bundle.ts PRELOADED_WORKFLOW_MODULES), so a value kept at module level
// would be every workflow's at once. What the SDK keeps per workflow is the global object:
// with its reusable V8 context (the default) it saves a workflow's globals when another
// workflow's activation runs and puts them back for its next one (@temporalio/worker
// lib/workflow/reusable-vm.js), and without it each workflow has a context of its own. So
// the value lives in a global slot of the workflow's own, made on first use, and leaves the
// worker with the workflow when it is evicted (a replay makes it again, from history).
export function workflowLocal<T>(name: string, create: () => T): () => T {
  const slot = Symbol(`keel.${name}`);
  const slots = globalThis as unknown as Record<symbol, T | undefined>;
  return () => {
    const held = slots[slot];
    if (held !== undefined) return held;
    const made = create();
    slots[slot] = made;
    return made;
  };
}
