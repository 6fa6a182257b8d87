// The custom search attributes Keel keeps current on its workflows, so the Web UI and
// `temporal workflow list --query` can find e.g. every session waiting for approval.
// Plain `{ name, type }` objects are SearchAttributeKeys; spelling them out keeps this
// module free of @temporalio/common, which workflow code does not import.
export const KeelKind = { name: 'KeelKind', type: 'KEYWORD' } as const;
export const KeelStatus = { name: 'KeelStatus', type: 'KEYWORD' } as const;
export const KeelPendingApprovals = { name: 'KeelPendingApprovals', type: 'INT' } as const;
export const KeelWorkspace = { name: 'KeelWorkspace', type: 'KEYWORD' } as const;

/**
 * What a run waits out (machines/infra-retry.ts infraWaitingKey): "conversation-store",
 * "host:<name>", …; absent when it waits for nothing. Written only where the server has it
 * registered (workflows/waiting-attribute.ts): a server set up before it existed does not
 * fail Keel's workflows.
 */
export const KeelWaiting = { name: 'KeelWaiting', type: 'KEYWORD' } as const;

export const keelSearchAttributes = [KeelKind, KeelStatus, KeelPendingApprovals, KeelWorkspace, KeelWaiting] as const;
