/**
 * mcp/: the gateway's MCP server (docs/mcp.md): resilient tools that answer failures as tool results,
 * job tools with `get_job_status`, `cancel_job` and `respond_to_job`, MCP tasks on the durable job store, the progress bridge,
 * and Streamable HTTP sessions mounted on Fastify. The official SDK is reached only through `sdk.ts`.
 */
export {
  resilientTool,
  jsonSchemaInput,
  TOOL_DEADLINE_DEFAULT_MS,
  TOOL_DEADLINE_MAX_MS,
  type JobTool,
  type McpTool,
  type ResilientToolDefinition,
  type SyncTool,
  type ToolArgs,
  type ToolContext,
  type ToolInput,
  type LogLevel,
} from './tool.js';
export { jobTool, type JobToolDefinition } from './job-tools.js';
export {
  INPUT_BOUNDS,
  type InputAnswer,
  type InputAnswerOf,
  type InputAsk,
  type InputContext,
  type InputQuestion,
  type InputSchema,
  type InputSupport,
  type RootsAnswer,
  type SamplingAnswer,
  type SamplingRequest,
} from './input.js';
export {
  resource,
  type McpResource,
  type ReadContext,
  type ResourceBody,
  type ResourceContents,
  type ResourceDefinition,
  type ResourceListing,
  type CacheHint,
} from './resource.js';
export {
  resourceTemplate,
  type Completer,
  type McpResourceTemplate,
  type ResourceTemplateDefinition,
  type ResourceTemplateListing,
} from './resource-template.js';
export {
  prompt,
  type McpPrompt,
  type PromptArguments,
  type PromptContent,
  type PromptDefinition,
  type PromptListing,
  type PromptMessage,
  type PromptResult,
} from './prompt.js';
export { uiResource, type UiCsp, type UiResourceDefinition } from './ui.js';
export { APPS_SDK_MIME_TYPE, MCP_APP_MIME_TYPE, type ToolUi, type UiResource } from './ui-meta.js';
export { errorResult, successResult, toolErrorInfo, type ErrorResultOptions } from './results.js';
export { createMcpServer, type BreakwaterMcpServer, type McpServerOptions } from './server.js';
export { MCP_SERVER_DEFAULTS } from './options.js';
export { MCP_ROUTES_DEFAULTS, mcpRoutes, type McpRoutes, type McpRoutesOptions } from './routes.js';
export { JobTaskStore, TASK_STORE_DEFAULTS, taskStatus } from './task-store.js';
export type { McpEventStore } from './sdk.js';
export {
  createDurableEventStore,
  DURABLE_EVENT_STORE_DEFAULTS,
  type DurableEventStoreOptions,
} from './event-store.js';
export type {
  AudioContent,
  ContentAnnotations,
  ContentBlock,
  EmbeddedResource,
  EmbeddedResourceContents,
  ImageContent,
  ResourceLink,
  TaskInfo,
  TaskStatus,
  ToolAnnotations,
  ToolErrorInfo,
  ToolListing,
  TextContent,
  ToolResult,
} from './types.js';
