/**
 * A real MCP client (the official SDK) talking to a running GiftGenius gateway:
 * `node --import tsx examples/giftgenius/try.ts [http://127.0.0.1:8787/mcp]`. Lists the tools, asks for
 * gift ideas, runs a deep analysis as a job (polling its progress with `get_job_status`), and buys the best gift.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const url = new URL(process.argv[2] ?? 'http://127.0.0.1:8787/mcp');
const client = new Client({ name: 'giftgenius-try', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(url));

type Result = {
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
};
const call = async (name: string, args: Record<string, unknown>): Promise<Result> => {
  const result = (await client.callTool({ name, arguments: args })) as Result;
  console.log(`\n> ${name} ${JSON.stringify(args)}${result.isError === true ? '  [isError]' : ''}`);
  console.log(JSON.stringify(result.structuredContent ?? result.content, null, 2));
  return result;
};

const { tools } = await client.listTools();
console.log(`tools: ${tools.map((t) => t.name).join(', ')}`);

const ideas = await call('suggest_gifts', {
  interests: ['coffee', 'travel'],
  budget_usd: 40,
  recipient: 'Sam',
  limit: 3,
});
const job = await call('start_deep_analysis', {
  interests: ['music', 'cooking'],
  budget_usd: 80,
  recipient: 'Alex',
});
const jobId = job.structuredContent?.job_id as string;
for (;;) {
  const status = (await client.callTool({ name: 'get_job_status', arguments: { job_id: jobId } })) as Result;
  const s = status.structuredContent as {
    status: string;
    progress?: { step: number; total: number; message?: string };
  };
  console.log(
    `  job ${s.status}${s.progress ? `: step ${s.progress.step}/${s.progress.total} ${s.progress.message ?? ''}` : ''}`,
  );
  if (!['pending', 'in_progress'].includes(s.status)) {
    console.log(JSON.stringify(status.structuredContent, null, 2));
    break;
  }
  await new Promise((resolve) => setTimeout(resolve, 500));
}
const best = (ideas.structuredContent?.gifts as Array<{ id: string }> | undefined)?.[0];
if (best !== undefined) await call('checkout', { product_id: best.id, quantity: 1, customer_id: 'cus_demo' });
await client.close();
