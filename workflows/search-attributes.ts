// The custom search attributes Keel keeps current on its workflows, so the Web UI and
// `temporal workflow list --query` can find e.g. every session waiting for approval.
// Plain `{ name, type }` objects are SearchAttributeKeys; spelling them out keeps this
// module free of @temporalio/common, which workflow code does not import.
export const KeelKind = { name: 'KeelKind', type: 'KEYWORD' } as const;
export const KeelStatus = { name: 'KeelStatus', type: 'KEYWORD' } as const;
export const KeelPendingApprovals = { name: 'KeelPendingApprovals', type: 'INT' } as const;
export const KeelWorkspace = { name: 'KeelWorkspace', type: 'KEYWORD' } as const;

export const keelSearchAttributes = [KeelKind, KeelStatus, KeelPendingApprovals, KeelWorkspace] as const;
