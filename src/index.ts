/**
 * Breakwater's public face: `import { ... } from 'breakwater'`. Later issues add stores, jobs, operations,
 * webhooks, the upstream client, the AI gateway and the MCP server here.
 */
export * from './core/index.js';
export * from './policy/index.js';
