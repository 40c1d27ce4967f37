/**
 * Runs the simulated provider on its own: `node --import tsx examples/llm-sim/main.ts`.
 * `LLM_SIM_PORT` (default 8799; 0 picks a free one), `LLM_SIM_HOST` (default 127.0.0.1). Change its
 * behaviour with `curl -X PATCH localhost:8799/_faults -d '{"firstByteMs":2000}'`.
 */
import { startSimulatedProvider } from './provider.js';

const port = Number(process.env.LLM_SIM_PORT ?? 8799);
if (!Number.isInteger(port) || port < 0 || port > 65_535) {
  console.error(`LLM_SIM_PORT must be a port number, got ${process.env.LLM_SIM_PORT}`);
  process.exit(2);
}
const sim = await startSimulatedProvider({
  port,
  host: process.env.LLM_SIM_HOST ?? '127.0.0.1',
  tokensPerSecond: 50,
  recordRequests: false, // a long-running process: keep no request bodies
});
console.log(`simulated provider at ${sim.url}`);
const stop = (): void => void sim.close().then(() => process.exit(0));
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
