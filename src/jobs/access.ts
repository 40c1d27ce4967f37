import { canAccess, PRINCIPALS, PrincipalContext, type Principal } from '../core/index.js';
import type { JobRecord } from '../store/index.js';

/**
 * Who may see a job over HTTP and MCP (docs/architecture.md#identity-and-ownership): its owner, and any
 * principal with the `admin` scope (core's `canAccess`). A job without an owner (made by the gateway itself,
 * or before owners were kept) is admin-only. The fronts answer a job the caller may not see exactly as one
 * that does not exist.
 */

/**
 * The principal a front (an HTTP route, an MCP session) serves: `given` (the HTTP edge's
 * `request.principal`), else the current `PrincipalContext`'s, else `PRINCIPALS.anonymous`. The last case is
 * a host that mounted Breakwater's routes without its edge: nothing identifies callers there, so they are all
 * one caller with every scope, as under `--insecure-no-auth`; Breakwater's own server always sets one.
 */
export function callerPrincipal(given?: Principal): Principal {
  return given ?? PrincipalContext.get() ?? PRINCIPALS.anonymous;
}

/** `job` when `principal` may see it, else undefined (as if it did not exist). */
export function jobVisibleTo<J extends Pick<JobRecord, 'owner'>>(
  principal: Principal,
  job: J | undefined,
): J | undefined {
  return job !== undefined && canAccess(principal, job.owner) ? job : undefined;
}

/**
 * The owner filter of a job list answered to `principal`: for `admin`, `asked` (undefined: every owner); for
 * anyone else always its own id, and `null` (the list is empty) when it `asked` for another owner's jobs.
 */
export function listOwner(principal: Principal, asked?: string): string | undefined | null {
  if (principal.scopes.has('admin')) return asked;
  return asked === undefined || asked === principal.id ? principal.id : null;
}
