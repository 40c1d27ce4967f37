/**
 * `breakwater/mcp`: the MCP server: resilient tools answering failures as tool results, job
 * tools with status and cancel, MCP tasks on the durable job store, Streamable HTTP routes (loads the MCP
 * SDK).
 */
export {
  resilientTool,
  TOOL_DEADLINE_DEFAULT_MS,
  TOOL_DEADLINE_MAX_MS,
  type JobTool,
  type McpTool,
  type ResilientToolDefinition,
  type SyncTool,
  type ToolArgs,
  type ToolContext,
  type ToolInput,
  jobTool,
  type JobToolDefinition,
  errorResult,
  successResult,
  type ErrorResultOptions,
  createMcpServer,
  type BreakwaterMcpServer,
  type McpServerOptions,
  mcpRoutes,
  type McpRoutes,
  type McpRoutesOptions,
  type McpEventStore,
  createDurableEventStore,
  DURABLE_EVENT_STORE_DEFAULTS,
  type DurableEventStoreOptions,
  type TaskInfo,
  type TaskStatus,
  type ToolAnnotations,
  type ToolErrorInfo,
  type ToolListing,
  type ToolResult,
} from '../mcp/index.js';
