// The approval policy: which tool calls run on their own, which need a human, which are
// refused. Pure code — it runs inside workflows — so paths are normalized lexically
// (posix, workspace-relative) and shell commands are split by a small tokenizer here
// rather than by a library. The tools themselves enforce confinement on the real
// filesystem at the moment of use; these files decide only who has to say yes.
// One concept a file; this index is the module's public surface.
export { builtinToolKinds, type BuiltinToolName, MCP_TOOL_PREFIX, toolKind, type ToolKind } from './tool-kinds';
export { defaultPolicy, HeadlessAsk, parsePolicy, POLICY_FILE, PolicyConfig, type PolicyConfigInput, PolicyMode, policyModes, type PolicyParse, PolicyRule, SandboxLevel, sandboxLevels, SandboxRule } from './config';
export { mergePolicies, type PolicyOrigin, type PolicySource, type ResolvedPolicy, resolvePolicy } from './merge';
export { approvalOf, describeGrounds, evaluatePolicy, type PolicyContext, type PolicyDecision, type PolicyGrounds, type PolicyRequest, type PolicyVerdict } from './evaluate';
export { type CommandSandbox, describeSandbox, sandboxFor } from './sandbox';
export { commandMatches, pathGlobMatches, ruleCovers } from './matching';
export { type CommandPart, commandPartsOf } from './subjects';
export { mcpWorkspacePath, normalizeWorkspacePath, pathArgumentsOf, type WorkspacePath } from './paths';
export { splitShellCommand, tokenizeShell } from './shell';
export { type ApprovalGrant, ApprovalScope, canonicalJson, describeApproval, EXACT_APPROVALS_PATCH, ExactCall, rememberApproval, sameApproval, SessionApproval, sessionApprovalFor } from './session-approval';
export { legacySessionRuleFor, suggestedRuleFor } from './suggestions';
export { approvalFrom, suggestedSessionRule, unknownCallMessage, type ApprovalAnswer, type ApprovalDecision, type ApprovalRefusalCode, type WaitingCall } from './approval';
export { programName } from './command-views';
