/**
 * The caller of an AI request (docs/architecture.md#identity-and-ownership): the metadata its rate and spend
 * rules and route conditions read, and the models its key allows.
 *
 * Metadata comes from the credential. `Principal.metadata` is bound to the key or token; the client's
 * `x-breakwater-metadata` header adds to it only when the principal is a trusted backend (a server that calls
 * on behalf of its own users and says whose request it is), and never changes a key the credential binds.
 * Anyone else sending the header is refused, not ignored: a client that believes it is counted per user
 * while it is not would be misled, and the refusal names the header it must stop sending.
 *
 * A request without a principal (the gateway mounted on an app without Breakwater's HTTP edge, which sets
 * `request.principal`) is served as `PRINCIPALS.local` is: its header is trusted, as it was before principals
 * existed, and it has no limits of its own.
 */
import { BreakwaterError, type Principal } from '../core/index.js';
import { invalidHeader, parseMetadata } from './request-headers.js';
import type { Metadata } from './types.js';

const METADATA_HEADER = 'x-breakwater-metadata';

/**
 * The request's metadata: the principal's bound metadata, with the header's keys added when the principal is
 * a trusted backend (or absent: library use). O(keys) when the header is sent, else no copy.
 * @param header the raw `x-breakwater-metadata` value(s), as Node gives them.
 * @throws BreakwaterError `unauthorized` (403, `details.reason: 'metadata_not_allowed'`, `details.header`)
 *   when an untrusted principal sends the header; `unauthorized` (403, `reason: 'metadata_key_bound'`,
 *   `details.key`) when a trusted one sends a bound key with another value; `invalid_payload` (400,
 *   `invalid_header`) when the header is malformed or sent twice.
 */
export function callerMetadata(
  principal: Principal | undefined,
  header: string | string[] | undefined,
): Metadata {
  if (header === undefined) return principal?.metadata ?? EMPTY;
  if (principal !== undefined && !principal.trustedBackend) {
    throw new BreakwaterError('unauthorized', {
      status: 403,
      message: `This key may not set request metadata: send no ${METADATA_HEADER} header (its metadata is bound to the key; only a trusted backend's key may add to it).`,
      details: { reason: 'metadata_not_allowed', header: METADATA_HEADER },
    });
  }
  if (Array.isArray(header)) throw invalidHeader(METADATA_HEADER, 'must be sent once');
  const sent = parseMetadata(header);
  if (principal === undefined) return sent;
  const bound = principal.metadata;
  let any = false;
  for (const key in bound) {
    any = true;
    if (Object.hasOwn(sent, key) && String(sent[key]) !== bound[key]) {
      throw new BreakwaterError('unauthorized', {
        status: 403,
        message: `The ${METADATA_HEADER} header may not change "${key}": this key binds it.`,
        details: { reason: 'metadata_key_bound', header: METADATA_HEADER, key },
      });
    }
  }
  return any ? Object.freeze({ ...sent, ...bound }) : sent;
}

const EMPTY: Metadata = Object.freeze({});

/** Each `allowedModels` list as a set, made once per list: the check is O(1) per request. */
const allowedSets = new WeakMap<readonly string[], ReadonlySet<string>>();

/**
 * Refuses `model` (as the client named it: `<provider>/<model>` or `dynamic/<route>`) when the principal's
 * `ai.allowedModels` does not list it. A route's own steps are the operator's choice and are not checked.
 * @throws BreakwaterError `unauthorized` (403, `details.reason: 'model_not_allowed'`, `details.field: 'model'`).
 */
export function checkModelAllowed(principal: Principal | undefined, model: string): void {
  const list = principal?.ai?.allowedModels;
  if (list === undefined) return;
  let allowed = allowedSets.get(list);
  if (allowed === undefined) allowedSets.set(list, (allowed = new Set(list)));
  if (allowed.has(model)) return;
  throw new BreakwaterError('unauthorized', {
    status: 403,
    message: `This key may not call the model ${JSON.stringify(model)}.`,
    details: { reason: 'model_not_allowed', field: 'model' },
  });
}

/**
 * True when the principal stands for everyone who reaches the gateway (`local` in loopback mode,
 * `anonymous` with `--insecure-no-auth`, the gateway itself) or is absent: one caller, so capping its share
 * of a shared budget protects no one.
 */
export function isSharedCaller(principal: Principal | undefined): boolean {
  return (
    principal === undefined ||
    principal.kind === 'local' ||
    principal.kind === 'anonymous' ||
    principal.kind === 'system'
  );
}
