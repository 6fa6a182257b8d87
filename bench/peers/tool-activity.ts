// The tool activity the peers' workflows call: Keel's own tool code (executeTool, the same
// as Keel's runTool activity) wrapped with this package's @temporalio/activity. Keel's
// runTool cannot be registered as it is: it imports the root copy of @temporalio/activity,
// whose Context is not the one the peers' worker (bench/peers/node_modules) sets up.
import { Context } from '@temporalio/activity';
import { DEFAULT_OUTPUT_CAP_BYTES } from '../../activities/tools/artifacts';
import { DEFAULT_ENV_ALLOW_LIST } from '../../activities/tools/context';
import { executeTool } from '../../activities/tools/run-tool';
import { openWorkspace } from '../../activities/tools/workspace';
import type { ToolResult } from '../../machines/tool-result';

export interface PeerToolRequest {
  workspace: string;
  tool: string;
  input: unknown;
}

export const peerToolActivities = {
  async runTool(request: PeerToolRequest): Promise<ToolResult> {
    const context = Context.current();
    const info = context.info;
    const ws = await openWorkspace(request.workspace);
    const beat = setInterval(() => context.heartbeat(), 500);
    try {
      return await executeTool(
        {
          ws,
          callKey: `${info.workflowExecution?.workflowId}/${info.workflowExecution?.runId}/${info.activityId}`,
          progress: (details) => context.heartbeat(details),
          signal: context.cancellationSignal,
          envAllowList: DEFAULT_ENV_ALLOW_LIST,
          outputCapBytes: DEFAULT_OUTPUT_CAP_BYTES,
        },
        request.tool,
        request.input,
      );
    } finally {
      clearInterval(beat);
    }
  },
};
