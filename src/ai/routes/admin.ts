/**
 * The routes' admin API as a Fastify plugin, behind `guard` (the gateway's admin auth: bearer token, session
 * cookie or loopback), by default answered only to loopback clients (403 otherwise):
 *
 * | method and path                            | body                       | answer                              |
 * | ------------------------------------------ | -------------------------- | ----------------------------------- |
 * | `GET /admin/ai/routes`                     |                            | `{ routes: [head…] }`               |
 * | `GET /admin/ai/routes/:name`               |                            | head and `versions` (newest first)  |
 * | `POST /admin/ai/routes/:name/versions`     | `{ definition, note? }`    | 201, the new draft                  |
 * | `POST /admin/ai/routes/:name/deploy`       | `{ version }`              | head, `previous` (also a rollback)  |
 * | `POST /admin/ai/routes/:name/rollback`     | `{ to? }` (default: below) | head, `previous`                    |
 *
 * Errors are problem+json: 400 `invalid_payload` (`reason: 'invalid_route'` and `path` for a bad definition),
 * 404 `not_found` (unknown route or version), 401/403 `unauthorized` (refused by the guard).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { BreakwaterError } from '../../core/index.js';
import { installErrorRenderer, isLocalClient } from '../../http/index.js';
import type { RouteHead, RouteStore, RouteVersion } from '../../store/index.js';
import { AI_ADMIN_ERRORS } from '../http/problems.js';
import { createRouteVersion, deployRouteVersion, rollbackRoute, type RouteDeployment } from './manage.js';
import type { RouteResolver } from './resolver.js';

/** Options of {@link routeAdminRoutes}. */
export interface RouteAdminOptions {
  /** `store.routes`. */
  routes: RouteStore;
  /** The gateway's provider names: a definition naming another is refused (default: not checked). */
  providers?: readonly string[];
  /** This process's resolver: told at once after a deploy here (other processes see it within `refreshMs`). */
  resolver?: Pick<RouteResolver, 'invalidate'>;
  /** Largest request body, bytes (default 256 KiB). */
  bodyLimitBytes?: number;
  /**
   * The check in front of every route, as a Fastify `onRequest` hook that throws a BreakwaterError to refuse
   * (the gateway passes its admin auth: token or loopback). Default: loopback clients only (403).
   */
  guard?: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
}

type NameParams = { Params: { name: string } };

const createBody = z.strictObject({ definition: z.unknown(), note: z.string().optional() });
const deployBody = z.strictObject({ version: z.number().int().min(1) });
const rollbackBody = z.strictObject({ to: z.number().int().min(1).optional() });

/**
 * Mounts the routes' admin API in its own encapsulated plugin, whose errors the edge's one handler answers
 * with the gateway's renderer ({@link AI_ADMIN_ERRORS}), on a Breakwater server and any other Fastify app.
 */
export async function routeAdminRoutes(app: FastifyInstance, options: RouteAdminOptions): Promise<void> {
  const { routes, providers, resolver } = options;
  const bodyLimit = options.bodyLimitBytes ?? 256 * 1024;
  await app.register(async (child) => {
    installErrorRenderer(child, AI_ADMIN_ERRORS);
    child.addHook(
      'onRequest',
      options.guard ??
        (async (request) => {
          if (!isLocalClient(request)) {
            throw new BreakwaterError('unauthorized', {
              status: 403,
              message: 'The routes admin API answers only to clients on this machine (loopback).',
            });
          }
        }),
    );
    child.addHook('onSend', async (_request, reply) => {
      void reply.header('cache-control', 'no-store');
    });

    child.get('/admin/ai/routes', async () => ({ routes: (await routes.heads()).map(headView) }));

    child.get<NameParams>('/admin/ai/routes/:name', async (request) => {
      const { name } = request.params;
      const versions = await routes.versions(name);
      const head = versions.length === 0 ? undefined : (await routes.heads()).find((h) => h.name === name);
      if (head === undefined) {
        throw new BreakwaterError('not_found', {
          message: `There is no route named ${JSON.stringify(name)}.`,
          details: { reason: 'unknown_route' },
        });
      }
      return { ...headView(head), versions: versions.map((v) => versionView(v, head.deployed)) };
    });

    child.post<NameParams>('/admin/ai/routes/:name/versions', { bodyLimit }, async (request, reply) => {
      const body = readBody(createBody, request.body);
      const version = await createRouteVersion(routes, request.params.name, body.definition, {
        note: body.note,
        providers,
      });
      return reply.code(201).send(versionView(version, null));
    });

    child.post<NameParams>('/admin/ai/routes/:name/deploy', { bodyLimit }, async (request) => {
      const { version } = readBody(deployBody, request.body);
      const done = await deployRouteVersion(routes, request.params.name, version, { providers });
      resolver?.invalidate();
      return deploymentView(done);
    });

    child.post<NameParams>('/admin/ai/routes/:name/rollback', { bodyLimit }, async (request) => {
      const { to } = readBody(rollbackBody, request.body ?? {});
      const done = await rollbackRoute(routes, request.params.name, to, { providers });
      resolver?.invalidate();
      return deploymentView(done);
    });
  });
}

/** A route's head as the API shows it (times ISO 8601). */
export function headView(head: RouteHead): Record<string, unknown> {
  return {
    name: head.name,
    deployed: head.deployed,
    latest: head.latest,
    deployed_at: head.deployedAt === null ? null : new Date(head.deployedAt).toISOString(),
  };
}

/** A version as the API shows it; `deployed` says whether it is the live one. */
export function versionView(version: RouteVersion, deployed: number | null): Record<string, unknown> {
  return {
    name: version.name,
    version: version.version,
    deployed: version.version === deployed,
    note: version.note,
    created_at: new Date(version.createdAt).toISOString(),
    definition: version.definition,
  };
}

function deploymentView(done: RouteDeployment): Record<string, unknown> {
  return { ...headView(done.head), previous: done.previous };
}

/** The body checked against `schema`. @throws BreakwaterError `invalid_payload` naming the field. */
function readBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.map(String).join('.');
  const missing = issue.code === 'invalid_type' && issue.message.endsWith('received undefined');
  throw new BreakwaterError('invalid_payload', {
    message:
      field === ''
        ? 'The body must be a JSON object.'
        : missing
          ? `The body has no ${field}; it is required.`
          : `The body's ${field} is invalid: ${issue.message}.`,
    details: { reason: 'invalid_body', ...(field === '' ? {} : { field }) },
  });
}
