/**
 * A simulated OpenAI-compatible provider for the AI gateway's tests, demo and benchmark: configurable
 * latency, time to first byte, token rate, error rate, 429 with `Retry-After`, hangs and mid-stream cuts,
 * all switchable at run time. Deterministic text and `usage`.
 */
export {
  startSimulatedProvider,
  type SimRequestRecord,
  type SimulatedProvider,
  type SimulatedProviderOptions,
} from './provider.js';
export { NORMAL, parseSettings, type SimBehaviour, type SimSettings, type SimSwitch } from './faults.js';
export { token } from './answers.js';
export { DEFAULT_DIMENSIONS, SIM_CREATED, embeddingVector, inputTokens } from './embeddings.js';
