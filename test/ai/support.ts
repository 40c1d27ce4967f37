/**
 * Shared helpers of the AI gateway's end-to-end tests (not a test file itself): a simulated provider, the
 * gateway mounted on a bare Fastify app listening on 127.0.0.1, and the official `openai` client pointed at
 * it (its own retries off, so every call is one request).
 */
import { fastify, type FastifyInstance } from 'fastify';
import OpenAI from 'openai';
import {
  startSimulatedProvider,
  type SimulatedProvider,
  type SimulatedProviderOptions,
} from '../../examples/llm-sim/index.js';
import {
  createAiGateway,
  type AiGateway,
  type AiGatewayOptions,
  type AiRequestLog,
} from '../../src/ai/index.js';
import type { Principal, PrincipalAiLimits } from '../../src/core/index.js';

export { useCleanups, tempDb } from '../support/cleanups.js';

/** The API key the gateway sends to the simulated provider (read from `env`). */
export const SIM_KEY = 'sk-sim-secret-0123456789';

export interface RunningGateway {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  gateway: AiGateway;
  app: FastifyInstance;
  /** The official client, `baseURL` the gateway's `/v1`, no retries of its own. */
  client: OpenAI;
  /** Every log line the gateway wrote. */
  logs: AiRequestLog[];
}

/** Starts a simulated provider, closed after the test. */
export async function startSim(
  defer: (cleanup: () => unknown) => void,
  options: SimulatedProviderOptions = {},
): Promise<SimulatedProvider> {
  const sim = await startSimulatedProvider({ apiKey: SIM_KEY, ...options });
  defer(() => sim.close());
  return sim;
}

/**
 * Starts the gateway on a bare Fastify app (closed after the test). `providers` defaults to one provider
 * `sim` at `sims.sim`; the key comes from `env.SIM_KEY`.
 *
 * `principals` stands in for the HTTP edge (src/http): an `onRequest` hook sets `request.principal` to the
 * principal whose key is the request's `Authorization: Bearer` value, as an API key would; a request with no
 * matching key gets none (library use).
 */
export async function startGateway(
  defer: (cleanup: () => unknown) => void,
  sims: Record<string, SimulatedProvider>,
  options: Partial<AiGatewayOptions> = {},
  principals: Readonly<Record<string, Principal>> = {},
): Promise<RunningGateway> {
  const providers =
    options.providers ??
    Object.fromEntries(
      Object.entries(sims).map(([name, sim]) => [name, { baseUrl: sim.url, apiKeyEnv: 'SIM_KEY' }]),
    );
  const logs: AiRequestLog[] = [];
  const gateway = createAiGateway({
    env: { SIM_KEY },
    ...options,
    providers,
    logger: { info: (line) => void logs.push(line) },
  });
  const app = fastify();
  app.addHook('onRequest', (request, _reply, done) => {
    const bearer = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    const principal = bearer === undefined ? undefined : principals[bearer];
    if (principal !== undefined) request.principal = principal;
    done();
  });
  await gateway.routes(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
  defer(async () => {
    // A client that aborted a stream can leave a second, never-used keep-alive socket open (undici's fetch),
    // which a graceful close would wait on.
    app.server.closeAllConnections();
    await app.close();
    await gateway.close();
  });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const url = `http://127.0.0.1:${port}`;
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'client-key', maxRetries: 0 });
  return { url, gateway, app, client, logs };
}

/** The official client for the gateway at `url` with `apiKey` as its bearer token (no retries of its own). */
export function clientFor(url: string, apiKey: string): OpenAI {
  return new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0 });
}

/** An API key's principal (`key:<name>`, scope `ai`), as the edge would admit it. */
export function keyPrincipal(
  name: string,
  fields: { metadata?: Record<string, string>; trustedBackend?: boolean; ai?: PrincipalAiLimits } = {},
): Principal {
  return Object.freeze({
    id: `key:${name}`,
    kind: 'api_key',
    name,
    scopes: new Set(['ai']),
    metadata: Object.freeze({ ...fields.metadata }),
    trustedBackend: fields.trustedBackend ?? false,
    ...(fields.ai === undefined ? {} : { ai: fields.ai }),
  });
}

/** A one-message request body. */
export function ask(
  model: string,
  extra: Record<string, unknown> = {},
): { model: string; messages: { role: 'user'; content: string }[] } & Record<string, unknown> {
  return { model, messages: [{ role: 'user', content: 'Suggest a gift.' }], ...extra };
}

/** Waits until `predicate` holds (polling every 5 ms), failing after `timeoutMs`. */
export async function until(predicate: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
