/**
 * The API keys' admin API (docs/security.md#api-keys), behind the admin check (`AdminAuth`: the
 * admin token, a dashboard session, or loopback when no token is configured):
 *
 * | method and path                     | body                       | answer                                         |
 * | ----------------------------------- | -------------------------- | ---------------------------------------------- |
 * | `GET /admin/api/keys`               | `?all=&limit=&before_id=`  | `{ keys: [view…], next_before_id }`            |
 * | `GET /admin/api/keys/:id`           |                            | the key's view                                 |
 * | `POST /admin/api/keys`              | the new key (`readApiKeyBody`) | 201, `{ key, …view }`, `Location` of the key |
 * | `POST /admin/api/keys/:id/revoke`   |                            | the key's view, `state: 'revoked'`             |
 *
 * `key` is in the 201 answer only: it is never stored and never shown again. Views never hold the hash.
 * Revocation is a POST action like the dashboard's other actions (isolate, retry, reconcile): it changes a
 * record that stays listed (`?all=true`), rather than deleting a resource. Every answer is `Cache-Control:
 * no-store`. Errors are problem+json: 400 `invalid_payload` (a bad query, id or body, naming the field), 404
 * `not_found`, 409 `too_many_keys`, 401/403 from the admin check. The gateway audits creations (target: the
 * `Location`) and revocations without the secret.
 */
import type { FastifyInstance } from 'fastify';
import { BreakwaterError, defineOptions, o, type Clock } from '../../core/index.js';
import { readApiKeyBody, toApiKeyView, type ApiKeys } from '../../http/keys/index.js';
import { API_KEY_LIST_DEFAULT_LIMIT, API_KEY_LIST_MAX_LIMIT } from '../../store/index.js';
import type { AdminAuth } from './auth.js';

/** Options of {@link keyAdminRoutes}; validated at once (an OptionsError names every bad option). */
export interface KeyAdminOptions {
  /** The gateway's keys: the same instance as its edge, so a revoke here is refused there at once. */
  keys: ApiKeys;
  auth: Pick<AdminAuth, 'hook'>;
  clock?: Clock;
  /** Largest body of `POST /admin/api/keys`, bytes (integer >= 1, default 16 KiB). */
  bodyLimitBytes?: number;
}

/** Defaults of {@link KeyAdminOptions}. */
export const KEY_ADMIN_DEFAULTS = { bodyLimitBytes: 16 * 1024 } as const;

/** Checks {@link KeyAdminOptions} and applies {@link KEY_ADMIN_DEFAULTS}. */
const parseOptions = defineOptions<KeyAdminOptions>()('keyAdminRoutes', {
  // Made by http/'s createApiKeys and this folder's createAdminAuth.
  keys: o.any<ApiKeys>(),
  auth: o.any<Pick<AdminAuth, 'hook'>>(),
  clock: o.clock(),
  bodyLimitBytes: o.number().int().min(1).default(KEY_ADMIN_DEFAULTS.bodyLimitBytes),
});

const KEY_ID_PARAMS = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' } },
} as const;

const LIST_QUERY = {
  type: 'object',
  additionalProperties: false,
  properties: {
    all: { type: 'boolean', default: false },
    limit: {
      type: 'integer',
      minimum: 1,
      maximum: API_KEY_LIST_MAX_LIMIT,
      default: API_KEY_LIST_DEFAULT_LIMIT,
    },
    before_id: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
  },
} as const;

type IdParams = { Params: { id: string } };

/**
 * Mounts the keys' admin API (call inside its own plugin: it sets the body parsers of its context).
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `keyAdminRoutes`) naming every bad option.
 */
export async function keyAdminRoutes(app: FastifyInstance, options: KeyAdminOptions): Promise<void> {
  const { keys, auth, clock, bodyLimitBytes: bodyLimit } = parseOptions(options);
  // JSON with Fastify's own parser (it refuses `__proto__` and `constructor.prototype`), an empty body as
  // none; any other body is read up to 1 KiB and ignored, as on the dashboard's other actions.
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit }, (request, body, done) => {
    if (body === '') done(null, undefined);
    else json(request, body as string, done);
  });
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 1024 }, (_request, _body, done) =>
    done(null, undefined),
  );
  app.addHook('onRequest', auth.hook);
  app.addHook('onSend', async (_request, reply) => {
    void reply.header('cache-control', 'no-store');
  });

  const notFound = (id: string) =>
    new BreakwaterError('not_found', {
      message: `There is no API key ${id}.`,
      details: { reason: 'unknown_key' },
    });

  app.get<{ Querystring: { all: boolean; limit: number; before_id?: string } }>(
    '/admin/api/keys',
    { schema: { querystring: LIST_QUERY } },
    async (request) => {
      const { all, limit, before_id: beforeId } = request.query;
      const found = await keys.list({
        includeRevoked: all,
        limit,
        ...(beforeId === undefined ? {} : { beforeId }),
      });
      const now = clock.now();
      return {
        keys: found.map((record) => toApiKeyView(record, now)),
        next_before_id: found.length === limit ? (found.at(-1)?.id ?? null) : null,
      };
    },
  );

  app.get<IdParams>('/admin/api/keys/:id', { schema: { params: KEY_ID_PARAMS } }, async (request) => {
    const record = await keys.get(request.params.id);
    if (record === undefined) throw notFound(request.params.id);
    return toApiKeyView(record, clock.now());
  });

  app.post('/admin/api/keys', async (request, reply) => {
    const { key, record } = await keys.create(readApiKeyBody(request.body));
    return reply
      .code(201)
      .header('location', `/admin/api/keys/${record.id}`)
      .send({ key, ...toApiKeyView(record, clock.now()) });
  });

  app.post<IdParams>('/admin/api/keys/:id/revoke', { schema: { params: KEY_ID_PARAMS } }, async (request) => {
    const record = await keys.revoke(request.params.id);
    if (record === undefined) throw notFound(request.params.id);
    return toApiKeyView(record, clock.now());
  });
}
