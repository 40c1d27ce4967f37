import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classify, parseRetryAfter, toBreakwaterError, type Classification } from './classify.js';
import { BreakwaterError } from './errors.js';

/** 2026-01-01T00:00:00Z, a Thursday: "now" for every HTTP-date below. */
const NOW = Date.UTC(2026, 0, 1);

let statusServer: http.Server;
let resetServer: http.Server;
let statusBase: string;
let resetBase: string;
let closedPort: number;

async function listen(server: http.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function close(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve())));
}

beforeAll(async () => {
  // `/<status>?<header>=<value>&...` answers with that status and those headers.
  statusServer = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const headers: Record<string, string> = {};
    for (const [name, value] of url.searchParams) headers[name] = value;
    req.resume();
    req.on('end', () => res.writeHead(Number(url.pathname.slice(1)), headers).end('body'));
  });
  statusBase = `http://127.0.0.1:${await listen(statusServer)}`;

  // Reads the whole request, then drops the connection without answering: reset after write.
  resetServer = http.createServer((req) => {
    req.resume();
    req.on('end', () => req.socket.destroy());
  });
  resetBase = `http://127.0.0.1:${await listen(resetServer)}`;

  const closed = http.createServer();
  closedPort = await listen(closed);
  await close(closed);
});

afterAll(async () => {
  await close(statusServer);
  await close(resetServer);
});

async function fetchError(url: string, init?: RequestInit): Promise<unknown> {
  try {
    const response = await fetch(url, init);
    await response.arrayBuffer();
  } catch (error) {
    return error;
  }
  throw new Error(`expected ${url} to fail`);
}

async function respond(
  status: number,
  method = 'GET',
  headers: Record<string, string> = {},
): Promise<Response> {
  const query = new URLSearchParams(headers).toString();
  const response = await fetch(`${statusBase}/${status}${query ? `?${query}` : ''}`, {
    method,
    body: method === 'GET' ? undefined : '{"order":1}',
  });
  expect(await response.text()).toBe('body');
  expect(response.status).toBe(status);
  return response;
}

function expected(overrides: Partial<Classification>): Classification {
  return {
    kind: 'transient',
    code: 'upstream_unavailable',
    outcome: 'failed',
    retryable: true,
    status: undefined,
    retryAfterMs: undefined,
    written: undefined,
    reason: '',
    ...overrides,
  };
}

describe('classify: real connection failures (fetch against node:http)', () => {
  it('connection refused is transient, not written, failed, and retryable even for POST', async () => {
    const error = await fetchError(`http://127.0.0.1:${closedPort}/orders`, { method: 'POST', body: 'x' });
    expect(error).toBeInstanceOf(TypeError);
    const want = expected({ written: false, reason: 'ECONNREFUSED' });
    expect(classify(error, { method: 'POST' })).toEqual(want);
    expect(classify(error, { method: 'GET' })).toEqual(want);
    expect(classify(error)).toEqual(want);
  });

  it('a reset after the request was written is unknown and not retryable for POST', async () => {
    const error = await fetchError(`${resetBase}/orders`, { method: 'POST', body: '{"order":1}' });
    expect(error).toBeInstanceOf(TypeError);
    expect(classify(error, { method: 'POST' })).toEqual(
      expected({ outcome: 'unknown', retryable: false, written: true, reason: 'UND_ERR_SOCKET' }),
    );
    expect(classify(error, { method: 'patch' })).toEqual(
      expected({ outcome: 'unknown', retryable: false, written: true, reason: 'UND_ERR_SOCKET' }),
    );
  });

  it('with an idempotency key the POST stays unknown but becomes retryable', async () => {
    const error = await fetchError(`${resetBase}/orders`, { method: 'POST', body: '{"order":1}' });
    expect(classify(error, { method: 'POST', idempotencyKey: true })).toEqual(
      expected({ outcome: 'unknown', retryable: true, written: true, reason: 'UND_ERR_SOCKET' }),
    );
  });

  it('a POST declared idempotent (a search) is read like a GET: failed and retryable', async () => {
    const error = await fetchError(`${resetBase}/search`, { method: 'POST', body: '{"q":"kite"}' });
    expect(classify(error, { method: 'POST', idempotent: true })).toEqual(
      expected({ outcome: 'failed', retryable: true, written: true, reason: 'UND_ERR_SOCKET' }),
    );
  });

  it('a reset after a GET is failed and retryable', async () => {
    const error = await fetchError(`${resetBase}/orders/1`);
    const want = expected({ outcome: 'failed', retryable: true, written: true, reason: 'UND_ERR_SOCKET' });
    expect(classify(error, { method: 'GET' })).toEqual(want);
    expect(classify(error, { method: 'PUT' })).toEqual(want);
    // Without a method we cannot tell a write, so the outcome is not claimed to be unknown.
    expect(classify(error)).toEqual(want);
  });

  it('a DNS failure for a .invalid name (RFC 6761) is transient and not written', async () => {
    const error = await fetchError('http://breakwater-test.invalid/', { method: 'POST', body: 'x' });
    const c = classify(error, { method: 'POST' });
    // ENOTFOUND with a resolver; EAI_AGAIN where no resolver is reachable. Both mean "not sent".
    expect(['ENOTFOUND', 'EAI_AGAIN']).toContain(c.reason);
    expect(c).toEqual(expected({ written: false, reason: c.reason }));
  });

  it('a connect-phase ETIMEDOUT is before write; a read-phase one is after write', () => {
    // Cannot be produced offline deterministically: shaped like Node's own errors.
    const connect = Object.assign(new Error('connect ETIMEDOUT 10.255.255.1:80'), {
      code: 'ETIMEDOUT',
      errno: -110,
      syscall: 'connect',
    });
    expect(classify(new TypeError('fetch failed', { cause: connect }), { method: 'POST' })).toEqual(
      expected({ written: false, reason: 'ETIMEDOUT' }),
    );
    const read = Object.assign(new Error('read ETIMEDOUT'), { code: 'ETIMEDOUT', syscall: 'read' });
    expect(classify(read, { method: 'POST' })).toEqual(
      expected({ code: 'timeout', outcome: 'unknown', retryable: false, written: true, reason: 'ETIMEDOUT' }),
    );
  });
});

/** Shaped like Node's `ExceptionWithHostPort` (net's connect/bind errors). */
function socketError(syscall: string, code: string, errno: number, address: string): Error {
  return Object.assign(new Error(`${syscall} ${code} ${address}`), { errno, code, syscall, address });
}

/** Shaped like undici's `fetch` rejection: `TypeError: fetch failed` with the real failure as `cause`. */
function fetchFailed(cause?: unknown): TypeError {
  return new TypeError('fetch failed', cause === undefined ? undefined : { cause });
}

/** Shaped like the errors Node's TLS client raises for a failed certificate check (`code` only). */
function tlsError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

describe('classify: other network failures', () => {
  it('a real bind EADDRNOTAVAIL (unlisted code) is before write: transient, failed, retryable for POST', async () => {
    // 192.0.2.1 is TEST-NET-1 (RFC 5737): never a local address, so binding to it fails at once.
    const error = await new Promise<Error>((resolve) => {
      const socket = net.connect({ host: '127.0.0.1', port: closedPort, localAddress: '192.0.2.1' });
      socket.on('error', resolve);
    });
    expect(error).toMatchObject({ code: 'EADDRNOTAVAIL', syscall: 'bind' });
    const want = expected({ written: false, reason: 'EADDRNOTAVAIL' });
    expect(classify(error, { method: 'POST' })).toEqual(want);
    expect(classify(fetchFailed(error), { method: 'POST' })).toEqual(want);
  });

  it.each([
    ['EADDRNOTAVAIL', -99],
    ['EMFILE', -24],
    ['ENFILE', -23],
    ['EACCES', -13],
  ])('connect %s (unlisted code, syscall connect) is before write for POST', (code, errno) => {
    // Not producible offline without exhausting descriptors or routes: shaped like Node's own errors.
    const cause = socketError('connect', code, errno, '10.0.0.1');
    expect(classify(fetchFailed(cause), { method: 'POST' })).toEqual(
      expected({ written: false, reason: code }),
    );
  });

  it('getaddrinfo EAI_FAIL (unlisted DNS code) is before write', () => {
    const cause = Object.assign(new Error('getaddrinfo EAI_FAIL api.example.com'), {
      errno: -4,
      code: 'EAI_FAIL',
      syscall: 'getaddrinfo',
      hostname: 'api.example.com',
    });
    expect(classify(fetchFailed(cause), { method: 'POST' })).toEqual(
      expected({ written: false, reason: 'EAI_FAIL' }),
    );
  });

  it('a real TLS handshake with a plain HTTP server is a permanent upstream_error, not written', async () => {
    const error = await fetchError(`${statusBase.replace('http:', 'https:')}/200`, {
      method: 'POST',
      body: 'x',
    });
    expect(error).toBeInstanceOf(TypeError);
    const c = classify(error, { method: 'POST' });
    // OpenSSL says ERR_SSL_WRONG_VERSION_NUMBER (some builds: ERR_SSL_PACKET_LENGTH_TOO_LONG).
    expect(c.reason).toMatch(/^ERR_SSL_/);
    expect(c).toEqual(
      expected({
        kind: 'permanent',
        code: 'upstream_error',
        retryable: false,
        written: false,
        reason: c.reason,
      }),
    );
  });

  it.each([
    ['certificate has expired', 'CERT_HAS_EXPIRED'],
    ['certificate is not yet valid', 'CERT_NOT_YET_VALID'],
    ['self-signed certificate', 'DEPTH_ZERO_SELF_SIGNED_CERT'],
    ['self-signed certificate in certificate chain', 'SELF_SIGNED_CERT_IN_CHAIN'],
    ['unable to get local issuer certificate', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY'],
    ['unable to verify the first certificate', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'],
    ["Hostname/IP does not match certificate's altnames", 'ERR_TLS_CERT_ALTNAME_INVALID'],
    ['wrong version number', 'ERR_SSL_WRONG_VERSION_NUMBER'],
    ['sslv3 alert handshake failure', 'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE'],
  ])('%s (%s) is a permanent upstream_error, not written', (message, code) => {
    // A certificate only the test trusts would need a key pair checked in: shaped like Node's TLS errors.
    const want = expected({
      kind: 'permanent',
      code: 'upstream_error',
      retryable: false,
      written: false,
      reason: code,
    });
    expect(classify(fetchFailed(tlsError(message, code)), { method: 'POST' })).toEqual(want);
    expect(classify(tlsError(message, code), { method: 'GET' })).toEqual(want);
  });

  it('a TLS handshake timeout is transient and not written', () => {
    const cause = tlsError('TLS handshake timeout', 'ERR_TLS_HANDSHAKE_TIMEOUT');
    expect(classify(fetchFailed(cause), { method: 'POST' })).toEqual(
      expected({ written: false, reason: 'ERR_TLS_HANDSHAKE_TIMEOUT' }),
    );
  });

  it('a real unparsable response (HPE_INVALID_CONSTANT, unlisted) is transient, written unknown', async () => {
    const garbage = net.createServer((socket) => {
      socket.once('data', () => socket.end('garbage\r\n\r\n'));
    });
    await new Promise<void>((resolve) => garbage.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = garbage.address() as AddressInfo;
      const error = await fetchError(`http://127.0.0.1:${port}/orders`, { method: 'POST', body: '{}' });
      expect(error).toBeInstanceOf(TypeError);
      expect(classify(error, { method: 'POST' })).toEqual(
        expected({ outcome: 'unknown', retryable: false, reason: 'HPE_INVALID_CONSTANT' }),
      );
      expect(classify(error, { method: 'POST', idempotencyKey: true })).toEqual(
        expected({ outcome: 'unknown', retryable: true, reason: 'HPE_INVALID_CONSTANT' }),
      );
      expect(classify(error, { method: 'GET' })).toEqual(expected({ reason: 'HPE_INVALID_CONSTANT' }));
    } finally {
      await new Promise<void>((resolve) => garbage.close(() => resolve()));
    }
  });

  it('unlisted undici codes are transient; a *TIMEOUT* one is a timeout', () => {
    // Shaped like undici's errors (a class with a `code`), wrapped as fetch wraps them.
    const size = Object.assign(new Error('Response content exceeded max size'), {
      code: 'UND_ERR_RES_EXCEEDED_MAX_SIZE',
    });
    expect(classify(fetchFailed(size), { method: 'POST' })).toEqual(
      expected({ outcome: 'unknown', retryable: false, reason: 'UND_ERR_RES_EXCEEDED_MAX_SIZE' }),
    );
    const slow = Object.assign(new Error('Some timeout'), { code: 'UND_ERR_SOME_TIMEOUT' });
    expect(classify(fetchFailed(slow), { method: 'GET' })).toEqual(
      expected({ code: 'timeout', reason: 'UND_ERR_SOME_TIMEOUT' }),
    );
  });

  it('fetch failed without any code is transient with an outcome we cannot tell', () => {
    // Shaped like undici's rejection when the underlying failure carries no code.
    const error = fetchFailed(new Error('other failure'));
    expect(classify(error, { method: 'POST' })).toEqual(
      expected({ outcome: 'unknown', retryable: false, reason: 'fetch_failed' }),
    );
    expect(classify(fetchFailed(), { method: 'GET' })).toEqual(expected({ reason: 'fetch_failed' }));
    expect(classify(fetchFailed())).toEqual(expected({ reason: 'fetch_failed' }));
  });

  it('a real invalid URL stays a fatal programming error', async () => {
    const error = await fetchError('not a url');
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).cause).toMatchObject({ code: 'ERR_INVALID_URL' });
    expect(classify(error, { method: 'POST' })).toEqual(
      expected({ kind: 'fatal', code: 'internal_error', retryable: false, reason: 'TypeError' }),
    );
  });

  it('fetch failed wrapping a programming-error code stays fatal', () => {
    for (const code of ['UND_ERR_INVALID_ARG', 'ERR_INVALID_ARG_TYPE', 'ERR_OUT_OF_RANGE']) {
      const cause = Object.assign(new TypeError('invalid argument'), { code });
      expect(classify(fetchFailed(cause), { method: 'POST' })).toEqual(
        expected({ kind: 'fatal', code: 'internal_error', retryable: false, reason: 'TypeError' }),
      );
    }
  });

  it('an abort code along the chain is canceled, not a network failure', () => {
    const cause = Object.assign(new Error('Request aborted'), { code: 'UND_ERR_ABORTED' });
    expect(classify(fetchFailed(cause), { method: 'POST' })).toEqual(
      expected({ kind: 'permanent', code: 'canceled', retryable: false, reason: 'UND_ERR_ABORTED' }),
    );
  });

  it('a BreakwaterError in the chain does not lend its code as a network code', () => {
    const wrapped = new Error('wrapper', { cause: new BreakwaterError('circuit_open') });
    expect(classify(wrapped, { method: 'POST' })).toEqual(expected({ reason: 'Error' }));
  });
});

describe('classify: real HTTP responses', () => {
  it.each([404, 400, 409, 422, 501])('%i is a permanent upstream_error', async (status) => {
    const response = await respond(status);
    expect(classify(response, { method: 'GET' })).toEqual(
      expected({
        kind: 'permanent',
        code: 'upstream_error',
        retryable: false,
        status,
        written: true,
        reason: `http_${status}`,
      }),
    );
  });

  it.each([401, 403])('%i is unauthorized', async (status) => {
    const response = await respond(status, 'POST');
    expect(classify(response, { method: 'POST' })).toEqual(
      expected({
        kind: 'permanent',
        code: 'unauthorized',
        retryable: false,
        status,
        written: true,
        reason: `http_${status}`,
      }),
    );
  });

  it.each([
    [408, 'timeout'],
    [425, 'upstream_unavailable'],
    [429, 'upstream_unavailable'],
    [500, 'upstream_unavailable'],
    [502, 'upstream_unavailable'],
    [503, 'upstream_unavailable'],
    [504, 'timeout'],
  ] as const)('%i is transient (%s) and retryable for GET', async (status, code) => {
    const response = await respond(status);
    expect(classify(response, { method: 'GET' })).toEqual(
      expected({ code, status, written: true, reason: `http_${status}` }),
    );
  });

  it.each([500, 502, 504])('%i on POST may have been processed: unknown, not retryable', async (status) => {
    const response = await respond(status, 'POST');
    expect(classify(response, { method: 'POST' })).toMatchObject({
      kind: 'transient',
      outcome: 'unknown',
      retryable: false,
      status,
    });
    expect(classify(response, { method: 'POST', idempotencyKey: true })).toMatchObject({
      outcome: 'unknown',
      retryable: true,
    });
  });

  it.each([408, 425, 429, 503])('%i on POST was not processed: failed and retryable', async (status) => {
    const response = await respond(status, 'POST');
    expect(classify(response, { method: 'POST' })).toMatchObject({
      kind: 'transient',
      outcome: 'failed',
      retryable: true,
      status,
    });
  });

  it('reads Retry-After in seconds', async () => {
    const response = await respond(503, 'GET', { 'retry-after': '20' });
    expect(classify(response, { method: 'GET', nowMs: NOW }).retryAfterMs).toBe(20_000);
  });

  it('reads Retry-After as an HTTP-date relative to nowMs', async () => {
    const response = await respond(429, 'POST', { 'retry-after': 'Thu, 01 Jan 2026 00:00:30 GMT' });
    expect(classify(response, { method: 'POST', nowMs: NOW })).toEqual(
      expected({ status: 429, retryAfterMs: 30_000, written: true, reason: 'http_429' }),
    );
    expect(classify(response, { nowMs: NOW + 29_500 }).retryAfterMs).toBe(500);
    expect(classify(response, { nowMs: NOW + 60_000 }).retryAfterMs).toBe(0);
  });

  it('prefers retry-after-ms (rounded up) over Retry-After, and falls back when it is malformed', async () => {
    const both = await respond(429, 'GET', { 'retry-after-ms': '1500.2', 'retry-after': '20' });
    expect(classify(both, { nowMs: NOW }).retryAfterMs).toBe(1501);
    const bad = await respond(429, 'GET', { 'retry-after-ms': 'soon', 'retry-after': '20' });
    expect(classify(bad, { nowMs: NOW }).retryAfterMs).toBe(20_000);
    const none = await respond(429);
    expect(classify(none, { nowMs: NOW }).retryAfterMs).toBeUndefined();
  });

  it('reads a node:http IncomingMessage (statusCode and a header record)', async () => {
    const message = await new Promise<http.IncomingMessage>((resolve, reject) => {
      http.get(`${statusBase}/503?retry-after=7`, resolve).on('error', reject);
    });
    message.resume();
    expect(classify(message, { method: 'GET', nowMs: NOW })).toEqual(
      expected({ status: 503, retryAfterMs: 7000, written: true, reason: 'http_503' }),
    );
  });

  it('reads an API error with a plain header record (openai-style)', () => {
    const apiError = Object.assign(new Error('Rate limit reached'), {
      status: 429,
      headers: { 'Retry-After-Ms': '250', 'x-request-id': 'req_1' },
    });
    expect(classify(apiError, { method: 'POST', nowMs: NOW })).toEqual(
      expected({ status: 429, retryAfterMs: 250, written: true, reason: 'http_429' }),
    );
  });
});

describe('classify: abort, timeout and programming errors', () => {
  it('TimeoutError is a timeout; unknown for POST', () => {
    const error = new DOMException('The operation timed out.', 'TimeoutError');
    expect(classify(error, { method: 'POST' })).toEqual(
      expected({ code: 'timeout', outcome: 'unknown', retryable: false, reason: 'TimeoutError' }),
    );
    expect(classify(error, { method: 'GET' })).toEqual(expected({ code: 'timeout', reason: 'TimeoutError' }));
  });

  it('a real AbortError from fetch is canceled and not retryable', async () => {
    const error = await fetchError(`${statusBase}/200`, { signal: AbortSignal.abort() });
    expect(error).toBeInstanceOf(DOMException);
    expect(classify(error, { method: 'POST' })).toEqual(
      expected({ kind: 'permanent', code: 'canceled', retryable: false, reason: 'AbortError' }),
    );
  });

  it('TypeError and RangeError are fatal internal errors', () => {
    let typeError: unknown;
    try {
      void (null as unknown as { x: number }).x;
    } catch (error) {
      typeError = error;
    }
    expect(typeError).toBeInstanceOf(TypeError);
    expect(classify(typeError)).toEqual(
      expected({ kind: 'fatal', code: 'internal_error', retryable: false, reason: 'TypeError' }),
    );
    let rangeError: unknown;
    try {
      new Array(-1);
    } catch (error) {
      rangeError = error;
    }
    expect(classify(rangeError)).toEqual(
      expected({ kind: 'fatal', code: 'internal_error', retryable: false, reason: 'RangeError' }),
    );
  });

  it('anything else is a transient upstream_unavailable', () => {
    expect(classify(new Error('weird'))).toEqual(expected({ reason: 'Error' }));
    expect(classify('weird')).toEqual(expected({ reason: 'string' }));
    expect(classify(undefined)).toEqual(expected({ reason: 'undefined' }));
  });

  it('`unclassified` names the code of anything else, and of nothing recognized', () => {
    const options = { unclassified: 'handler_failed' } as const;
    expect(classify(new Error('weird'), options)).toEqual(
      expected({ code: 'handler_failed', reason: 'Error' }),
    );
    expect(classify('weird', options)).toEqual(expected({ code: 'handler_failed', reason: 'string' }));
    // Recognized failures keep their codes.
    expect(classify(new TypeError('x is undefined'), options).code).toBe('internal_error');
    expect(classify(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }), options).code).toBe(
      'upstream_unavailable',
    );
    expect(classify(new BreakwaterError('circuit_open'), options).code).toBe('circuit_open');
  });
});

describe('classify: BreakwaterError', () => {
  it('our own rate_limited and spend_limited are never retryable', () => {
    for (const code of ['rate_limited', 'spend_limited'] as const) {
      const error = new BreakwaterError(code, { retryAfterMs: 3000 });
      expect(classify(error, { method: 'GET' })).toEqual(
        expected({ code, retryable: false, status: 429, retryAfterMs: 3000, reason: code }),
      );
    }
  });

  it('keeps the error own fields', () => {
    expect(classify(new BreakwaterError('circuit_open', { retryAfterMs: 20_000 }))).toEqual(
      expected({ code: 'circuit_open', status: 503, retryAfterMs: 20_000, reason: 'circuit_open' }),
    );
    expect(classify(new BreakwaterError('not_found'))).toEqual(
      expected({ kind: 'permanent', code: 'not_found', retryable: false, status: 404, reason: 'not_found' }),
    );
  });

  it('an unknown outcome is retryable only for a known idempotent request', () => {
    const error = new BreakwaterError('outcome_unknown');
    expect(classify(error).retryable).toBe(false);
    expect(classify(error, { method: 'POST' }).retryable).toBe(false);
    expect(classify(error, { method: 'POST', idempotencyKey: true }).retryable).toBe(true);
    expect(classify(error, { method: 'put' }).retryable).toBe(true);
  });
});

describe('toBreakwaterError', () => {
  it('maps a reset POST to outcome_unknown and keeps the cause', async () => {
    const cause = await fetchError(`${resetBase}/orders`, { method: 'POST', body: '{"order":1}' });
    const error = toBreakwaterError(cause, { method: 'POST', source: 'commerce', operationId: 'op_7' });
    expect(error).toBeInstanceOf(BreakwaterError);
    expect(error.cause).toBe(cause);
    expect({ ...error, name: error.name, message: error.message }).toEqual({
      name: 'BreakwaterError',
      code: 'outcome_unknown',
      kind: 'transient',
      status: 504,
      retryAfterMs: undefined,
      outcome: 'unknown',
      operationId: 'op_7',
      source: 'commerce',
      details: { reason: 'UND_ERR_SOCKET' },
      message:
        'The request was sent but no answer came back, so it may or may not have taken effect; check its status before trying again.',
    });
    expect(error.retryable).toBe(false);
    // Classifying the converted error again does not turn it retryable.
    expect(classify(error).retryable).toBe(false);
  });

  it('maps a 503 response with its retry hint and upstream status', async () => {
    const response = await respond(503, 'POST', { 'retry-after': '20' });
    const error = toBreakwaterError(response, { method: 'POST', nowMs: NOW });
    expect(error.cause).toBe(response);
    expect([error.code, error.kind, error.status, error.outcome, error.retryAfterMs]).toEqual([
      'upstream_unavailable',
      'transient',
      503,
      'failed',
      20_000,
    ]);
    expect(error.details).toEqual({ reason: 'http_503', upstream_status: 503 });
    expect(error.message).toBe(
      'A service this request depends on is unavailable right now; try again in about 20 seconds.',
    );
  });

  it('maps a TypeError to a fatal internal_error', () => {
    const cause = new TypeError('x is not a function');
    const error = toBreakwaterError(cause);
    expect([error.code, error.kind, error.status, error.outcome, error.cause]).toEqual([
      'internal_error',
      'fatal',
      500,
      'failed',
      cause,
    ]);
  });

  it('returns a BreakwaterError as it is', () => {
    const error = new BreakwaterError('bulkhead_full');
    expect(toBreakwaterError(error, { method: 'POST', source: 'x' })).toBe(error);
  });
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('0', NOW)).toBe(0);
    expect(parseRetryAfter('20', NOW)).toBe(20_000);
    expect(parseRetryAfter(' 120 ', NOW)).toBe(120_000);
    expect(parseRetryAfter('007', NOW)).toBe(7000);
  });

  it('rejects missing, negative, fractional and garbage values', () => {
    for (const value of [
      null,
      undefined,
      '',
      ' ',
      '-5',
      '1.5',
      '1e3',
      '20s',
      'soon',
      '0x10',
      'GMT',
      '1 GMT',
    ]) {
      expect(parseRetryAfter(value, NOW)).toBeUndefined();
    }
  });

  it('reads an IMF-fixdate relative to now, and a past date as 0', () => {
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', NOW)).toBe(30_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:00 GMT', NOW)).toBe(0);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:59:59 GMT', NOW)).toBe(0);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', NOW)).toBe(0);
  });

  it('reads the obsolete RFC 850 and asctime forms as UTC', () => {
    expect(parseRetryAfter('Thursday, 01-Jan-26 00:00:30 GMT', NOW)).toBe(30_000);
    expect(parseRetryAfter('Thu Jan  1 00:00:30 2026', NOW)).toBe(30_000);
    expect(parseRetryAfter('Thu Jan 01 00:01:00 2026', NOW)).toBe(60_000);
    // Two-digit years: more than 50 years ahead means the past century (RFC 9110, section 5.6.7).
    expect(parseRetryAfter('Sunday, 06-Nov-94 08:49:37 GMT', Date.UTC(1994, 10, 6, 8, 49))).toBe(37_000);
    expect(parseRetryAfter('Thursday, 01-Jan-70 00:00:10 GMT', Date.UTC(2070, 0, 1))).toBe(10_000);
  });

  it('rejects dates that are not in GMT or not well formed', () => {
    for (const value of [
      'Thu, 01 Jan 2026 00:00:30 +0000',
      'Thu, 01 Jan 2026 00:00:30 UTC',
      'Thu, 01 Jan 2026 00:00:30 PST',
      '2026-01-01T00:00:30Z',
      'thu, 01 jan 2026 00:00:30 gmt',
      'Thu, 1 Jan 2026 00:00:30 GMT',
      'Thu, 31 Feb 2026 00:00:30 GMT',
      'Thu, 01 Foo 2026 00:00:30 GMT',
      'Thu, 01 Jan 2026 24:00:00 GMT',
      'Thu Jan  1 00:00:30 2026 GMT',
    ]) {
      expect(parseRetryAfter(value, NOW)).toBeUndefined();
    }
  });
});

describe('classify: codes that are not the network stack', () => {
  it("a driver's own code (a PostgreSQL unique violation) is not read as a network failure", () => {
    const pgError = Object.assign(new Error('duplicate key value violates unique constraint'), {
      code: '23505',
    });
    const c = classify(pgError, { method: 'POST' });
    expect(c.reason).toBe('Error');
    expect(c.outcome).toBe('failed');
  });
});
