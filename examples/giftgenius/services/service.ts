import Fastify from 'fastify';
import type { FastifyError, FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import { FaultController, registerFaults } from './faults.js';
import type { FaultSwitch } from './faults.js';
import { HttpProblem, sendProblem } from './problem.js';

/** A running GiftGenius service: its base URL (no trailing slash), its fault switch and how to stop it. */
export interface ServiceHandle {
  name: string;
  url: string;
  faults: FaultSwitch;
  /**
   * Stops at once: stops listening and destroys every open connection, delayed, hanging and in-progress
   * requests included, so it never waits on them. Idempotent.
   */
  close(): Promise<void>;
}

/**
 * Where and how a service runs. `host` defaults to 127.0.0.1 (loopback only); `port` 0 (the default) picks
 * a free port; `random` (values in [0, 1), default `Math.random`) drives the `errorRate` fault.
 */
export interface ServiceOptions {
  host?: string;
  port?: number;
  random?: () => number;
}

/**
 * Builds a Fastify app with problem+json errors and fault injection, lets `routes` add the service's
 * routes, and listens.
 *
 * @throws Error naming the service, host and port when it cannot listen (for example `EADDRINUSE`); the
 *   original error is its `cause`.
 */
export async function startService(
  name: string,
  options: ServiceOptions,
  routes: (app: FastifyInstance) => void,
): Promise<ServiceHandle> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 0;
  // forceCloseConnections: close() destroys every open connection at once. The default ('idle') leaves a
  // connection a client opened but has not used yet (undici opens spare ones) until the client drops it.
  const app = Fastify({ logger: false, forceCloseConnections: true });
  const closing = new AbortController();
  const faults = new FaultController(options.random);

  app.setErrorHandler((error: FastifyError | HttpProblem, _request, reply) => {
    if (error instanceof HttpProblem) {
      return sendProblem(reply, error.status, error.code, error.message, error.extensions);
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const code =
        status === 413 ? 'payload_too_large' : status === 415 ? 'unsupported_media_type' : 'invalid_request';
      return sendProblem(reply, status, code, error.message);
    }
    // Never leak internals of an unexpected failure.
    return sendProblem(reply, 500, 'internal_error', 'An unexpected error occurred.');
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(
      reply,
      404,
      'not_found',
      `There is no route ${request.method} ${request.url.split('?', 1)[0]}.`,
    ),
  );
  registerFaults(app, faults, closing.signal);
  routes(app);

  try {
    await app.listen({ host, port });
  } catch (cause) {
    await app.close();
    const reason =
      (cause as NodeJS.ErrnoException).code === 'EADDRINUSE' ? 'the port is in use' : String(cause);
    throw new Error(`The ${name} service cannot listen on ${host}:${port}: ${reason}.`, { cause });
  }
  const address = app.server.address() as AddressInfo;
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  let closed: Promise<void> | undefined;
  return {
    name,
    url: `http://${urlHost}:${address.port}`,
    faults,
    close() {
      closed ??= (async () => {
        closing.abort();
        await app.close();
      })();
      return closed;
    },
  };
}
