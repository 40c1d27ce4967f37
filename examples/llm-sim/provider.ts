/**
 * A simulated OpenAI-compatible provider over plain node:http: `POST /v1/chat/completions` (streamed and
 * not, with `usage`), `POST /v1/embeddings`, `GET /v1/models[/{id}]`, and `/_faults` to change its
 * behaviour at run time. For the AI
 * gateway's tests, demo and benchmark; it does not import Breakwater.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { completion, errorBody, planAnswer, streamFrames, type AnswerPlan } from './answers.js';
import { DEFAULT_DIMENSIONS, SIM_CREATED, embeddingInputs, embeddingsAnswer } from './embeddings.js';
import { pause } from '../shared/hang.js';
import { SimController, type SimBehaviour, type SimSettings, type SimSwitch } from './faults.js';

/** Options of {@link startSimulatedProvider}: the initial behaviour and fixed traits. */
export interface SimulatedProviderOptions extends SimSettings {
  /** Port (default 0: a free one). */
  port?: number;
  /** Host (default `127.0.0.1`). */
  host?: string;
  /** When set, requests must send `Authorization: Bearer <apiKey>` (401 otherwise). */
  apiKey?: string;
  /** Tokens generated when a request has no `max_tokens` (default 16). */
  completionTokens?: number;
  /** Prompt tokens reported as cached (default 0). */
  cachedTokens?: number;
  /** Dimensions of an embedding when the request sets no `dimensions` (default 8). */
  embeddingDimensions?: number;
  /** The model ids `GET /v1/models` lists (default `['sim']`). */
  models?: readonly string[];
  /**
   * Report exactly this usage whatever the request (for exact cost tests); an embeddings answer reports
   * `promptTokens` alone.
   */
  usage?: { promptTokens: number; completionTokens: number };
  /** Uniform numbers in [0, 1) deciding `errorRate` and `jitterMs` draws (default `Math.random`). */
  random?: () => number;
  /** Keep every request in `requests` (default true). A benchmark turns it off, so memory stays flat. */
  recordRequests?: boolean;
  /**
   * Add `x_sim_service_ms` to each non-streamed answer (default false): the provider's own time for the
   * request, in ms, from its headers' arrival to the answer's write. A benchmark subtracts it from the
   * latency it measured, so what remains is what lies between the client and the provider (a gateway),
   * without the provider's simulated wait or its own pauses.
   */
  reportServiceTime?: boolean;
}

/** What the provider saw of one request (bodies are kept: this is a test double). */
export interface SimRequestRecord {
  at: number;
  /** `/v1/chat/completions` or `/v1/embeddings`. */
  path: string;
  model: unknown;
  stream: boolean;
  includeUsage: boolean;
  authorization: string | undefined;
  body: Record<string, unknown>;
}

/** A running simulated provider. */
export interface SimulatedProvider {
  /** The base URL, `/v1` included: give it to a client or a gateway's `providers.<name>.baseUrl`. */
  readonly url: string;
  readonly port: number;
  /** The run-time switch of its behaviour. */
  readonly faults: SimSwitch;
  /** Every chat completion and embeddings request received, in order (none with `recordRequests: false`). */
  readonly requests: readonly SimRequestRecord[];
  /** Stops: hanging and in-flight requests have their sockets destroyed. */
  close(): Promise<void>;
}

/**
 * Starts a simulated provider. Per request, in order: authorization (when `apiKey`), `hang`, `latencyMs` (plus up to `jitterMs`),
 * `errorRate` (503), `rateLimit429` (429 with `Retry-After`), then the answer: its first byte after
 * `firstByteMs`, its tokens at `tokensPerSecond`, broken off halfway with `cutMidStream`.
 */
export async function startSimulatedProvider(
  options: SimulatedProviderOptions = {},
): Promise<SimulatedProvider> {
  const { port = 0, host = '127.0.0.1', apiKey, completionTokens = 16, cachedTokens = 0, usage } = options;
  const { recordRequests = true, reportServiceTime = false } = options;
  const { embeddingDimensions = DEFAULT_DIMENSIONS, models = ['sim'] } = options;
  const random = options.random ?? Math.random;
  const controller = new SimController(pickSettings(options));
  const closing = new AbortController();
  const sockets = new Set<Socket>();
  const requests: SimRequestRecord[] = [];
  let seq = 0;

  const server = createServer((req, res) => {
    void handle(req, res).catch(() => res.destroy());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const arrived = performance.now();
    const path = (req.url ?? '/').split('?', 1)[0];
    const raw = await readBody(req);
    if (path === '/_faults') return faultsRoute(req, res, raw, controller);
    const model = (id: string) => ({ id, object: 'model', created: SIM_CREATED, owned_by: 'llm-sim' });
    if (req.method === 'GET' && path === '/v1/models') {
      return json(res, 200, JSON.stringify({ object: 'list', data: models.map(model) }));
    }
    if (req.method === 'GET' && path?.startsWith('/v1/models/')) {
      const id = decodeURIComponent(path.slice('/v1/models/'.length));
      if (models.includes(id)) return json(res, 200, JSON.stringify(model(id)));
      const message = `The model '${id}' does not exist.`;
      return json(res, 404, errorBody(message, 'invalid_request_error', 'model_not_found'));
    }
    const embeddings = path === '/v1/embeddings';
    if (req.method !== 'POST' || (path !== '/v1/chat/completions' && !embeddings)) {
      return json(res, 404, errorBody('Unknown route.', 'invalid_request_error', 'not_found'));
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return json(res, 400, errorBody('The body is not JSON.', 'invalid_request_error', null));
    }
    if (embeddings && embeddingInputs(body.input).length === 0) {
      return json(res, 400, errorBody('input is required.', 'invalid_request_error', null));
    }
    const n = ++seq;
    const stream = body.stream === true;
    const includeUsage =
      (body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
    if (recordRequests)
      requests.push({
        at: Date.now(),
        path: path!,
        model: body.model,
        stream,
        includeUsage,
        authorization: req.headers.authorization,
        body,
      });
    if (apiKey !== undefined && req.headers.authorization !== `Bearer ${apiKey}`) {
      // Like real providers, the message echoes (part of) the key it got: a gateway must not pass it on.
      const got = req.headers.authorization?.replace(/^Bearer /, '') ?? '';
      const message = `Incorrect API key provided: ${got}.`;
      return json(res, 401, errorBody(message, 'invalid_request_error', 'invalid_api_key'));
    }
    const gone = clientGone(res, closing.signal);
    if (!(await controller.waitWhileHanging(gone))) return void res.destroy();
    let b = controller.get();
    const latencyMs = b.jitterMs > 0 ? b.latencyMs + random() * b.jitterMs : b.latencyMs;
    if (!(await pause(latencyMs, gone))) return void res.destroy();
    b = controller.get();
    if (b.errorRate >= 1 || (b.errorRate > 0 && random() < b.errorRate)) {
      return json(res, 503, errorBody('The server is overloaded (simulated).', 'server_error', null));
    }
    if (b.rateLimit429 !== null && (n - 1) % b.rateLimit429.every === 0) {
      res.setHeader('retry-after', String(b.rateLimit429.retryAfterS));
      return json(res, 429, errorBody('Rate limit reached (simulated).', 'requests', 'rate_limit_exceeded'));
    }
    if (!(await pause(b.firstByteMs, gone))) return void res.destroy();
    if (embeddings) {
      return sendWhole(res, Buffer.from(embeddingsAnswer(body, embeddingDimensions, usage?.promptTokens)), b);
    }
    const plan = planAnswer(body, n, completionTokens, cachedTokens, usage);
    if (stream) await streamAnswer(res, plan, includeUsage, b, gone);
    else await jsonAnswer(res, plan, b, gone, reportServiceTime ? arrived : undefined);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  const actualPort = typeof address === 'object' && address !== null ? address.port : port;
  return {
    url: `http://${host}:${actualPort}/v1`,
    port: actualPort,
    faults: controller,
    requests,
    async close() {
      closing.abort();
      controller.patch({ hang: false });
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

/** Streams `plan`: headers with the first frame, then one frame per token at the token rate. */
async function streamAnswer(
  res: ServerResponse,
  plan: AnswerPlan,
  includeUsage: boolean,
  b: SimBehaviour,
  gone: AbortSignal,
): Promise<void> {
  const frames = streamFrames(plan, includeUsage);
  const cutAt = b.cutMidStream ? 1 + Math.floor(plan.tokens.length / 2) : Infinity;
  const gapMs = b.tokensPerSecond > 0 ? 1000 / b.tokensPerSecond : 0;
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  for (let i = 0; i < frames.length; i++) {
    if (i >= cutAt) return breakOff(res);
    res.write(frames[i]);
    // Tokens are paced; the role chunk goes out with the first token's wait, the tail frames at once.
    if (i >= 1 && i <= plan.tokens.length && gapMs > 0 && !(await pause(gapMs, gone)))
      return void res.destroy();
  }
  res.end();
}

/**
 * Answers `plan` as one JSON body after the time its tokens take; `cutMidStream` sends half and breaks off.
 * `arrived` (a `performance.now()`): report the time since in the body.
 */
async function jsonAnswer(
  res: ServerResponse,
  plan: AnswerPlan,
  b: SimBehaviour,
  gone: AbortSignal,
  arrived: number | undefined,
): Promise<void> {
  const generateMs = b.tokensPerSecond > 0 ? (plan.tokens.length * 1000) / b.tokensPerSecond : 0;
  if (!(await pause(generateMs, gone))) return void res.destroy();
  const body = Buffer.from(completion(plan, arrived === undefined ? undefined : performance.now() - arrived));
  return sendWhole(res, body, b);
}

/** Sends a JSON `body`; `cutMidStream` sends half and breaks off. */
async function sendWhole(res: ServerResponse, body: Buffer, b: SimBehaviour): Promise<void> {
  if (b.cutMidStream) {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
    res.write(body.subarray(0, body.length >> 1));
    return breakOff(res);
  }
  json(res, 200, body);
}

/** Destroys the connection once what was written has left (a cut, not a lost answer). */
async function breakOff(res: ServerResponse): Promise<void> {
  await new Promise<void>((resolve) => res.write('', () => resolve()));
  await new Promise((resolve) => setTimeout(resolve, 10));
  res.destroy();
}

function faultsRoute(
  req: IncomingMessage,
  res: ServerResponse,
  raw: string,
  controller: SimController,
): void {
  try {
    if (req.method === 'PUT') controller.set(JSON.parse(raw || '{}') as SimSettings);
    else if (req.method === 'PATCH') controller.patch(JSON.parse(raw || '{}') as SimSettings);
    else if (req.method === 'DELETE') controller.clear();
    else if (req.method !== 'GET')
      return json(res, 405, errorBody('Use GET, PUT, PATCH or DELETE.', 'invalid_request_error', null));
  } catch (error) {
    const message = error instanceof Error ? error.message : 'Invalid settings.';
    return json(res, 400, errorBody(message, 'invalid_request_error', null));
  }
  json(res, 200, JSON.stringify({ behaviour: controller.get(), hanging_requests: controller.hanging() }));
}

function pickSettings(o: SimulatedProviderOptions): SimSettings {
  const keys = [
    'latencyMs',
    'jitterMs',
    'firstByteMs',
    'tokensPerSecond',
    'errorRate',
    'rateLimit429',
    'hang',
    'cutMidStream',
  ] as const;
  const settings: Record<string, unknown> = {};
  for (const key of keys) if (o[key] !== undefined) settings[key] = o[key];
  return settings as SimSettings;
}

function json(res: ServerResponse, status: number, body: string | Buffer): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Aborts when the client leaves before the answer is complete, or the provider closes. */
function clientGone(res: ServerResponse, closing: AbortSignal): AbortSignal {
  const left = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) left.abort();
  });
  return AbortSignal.any([left.signal, closing]);
}
