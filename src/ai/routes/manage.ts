/**
 * Creating, deploying and rolling back route versions with their checks, shared by the admin API and the
 * `breakwater routes` command: a draft is stored only when its definition is valid, and a version is
 * deployed only when it exists and its definition is valid (the store takes any JSON).
 */
import { BreakwaterError } from '../../core/index.js';
import {
  MAX_ROUTE_NAME_LENGTH,
  type RouteHead,
  type RouteStore,
  type RouteVersion,
} from '../../store/index.js';
import { parseRouteDefinition, type ParseRouteOptions } from './definition.js';

const ROUTE_NAME = new RegExp(`^[A-Za-z0-9._-]{1,${MAX_ROUTE_NAME_LENGTH}}$`);

/** Longest note of a version, characters (the store's bound). */
export const MAX_ROUTE_NOTE_LENGTH = 1000;

/** What a deploy or rollback changed. */
export interface RouteDeployment {
  head: RouteHead;
  /** The version deployed before, or null (the first deploy). Equal to `head.deployed` when nothing changed. */
  previous: number | null;
}

/**
 * Stores a new draft of `name` after validating `definition` (see `parseRouteDefinition`).
 * @throws BreakwaterError `invalid_payload` (400): `reason: 'invalid_route'` with `path` for the definition,
 *   `reason: 'invalid_name'` for the name, `reason: 'invalid_body'` with `field: 'note'` for the note.
 */
export async function createRouteVersion(
  routes: RouteStore,
  name: string,
  definition: unknown,
  options: ParseRouteOptions & { note?: string } = {},
): Promise<RouteVersion> {
  checkName(name);
  const note = options.note;
  if (
    note !== undefined &&
    (typeof note !== 'string' || note.length > MAX_ROUTE_NOTE_LENGTH || note.includes('\0'))
  ) {
    throw new BreakwaterError('invalid_payload', {
      message: `note must be a string of at most ${MAX_ROUTE_NOTE_LENGTH} characters.`,
      details: { reason: 'invalid_body', field: 'note' },
    });
  }
  parseRouteDefinition(definition, options);
  return routes.create(name, definition, note);
}

/**
 * Deploys `version` of `name` (an earlier one is a rollback). Deploying the deployed version changes nothing.
 * @throws BreakwaterError `not_found` (404) when that version does not exist; `invalid_payload` (400,
 *   `reason: 'invalid_route'`) when its stored definition is not valid (it was stored around these checks).
 */
export async function deployRouteVersion(
  routes: RouteStore,
  name: string,
  version: number,
  options: ParseRouteOptions = {},
): Promise<RouteDeployment> {
  checkName(name);
  const found = Number.isInteger(version) && version >= 1 ? await routes.get(name, version) : undefined;
  if (found === undefined) throw unknownVersion(name, version);
  parseRouteDefinition(found.definition, options);
  const before = (await routes.heads()).find((h) => h.name === name)?.deployed ?? null;
  const head = await routes.deploy(name, version);
  if (head === undefined) throw unknownVersion(name, version);
  return { head, previous: before };
}

/**
 * The version a rollback of `head` goes to without an explicit one: the version numbered just below the
 * deployed one. The store keeps no history of deploys, so this is the previous version by number, which
 * is the previously deployed one when versions are deployed in order (not after a rollback, nor when a
 * draft was skipped).
 * @throws BreakwaterError `not_found` when nothing is deployed, or version 1 is.
 */
export function rollbackTarget(head: RouteHead | undefined, name: string): number {
  if (head === undefined || head.deployed === null) {
    throw new BreakwaterError('not_found', {
      message: `The route ${name} has no deployed version to roll back from.`,
      details: { reason: 'nothing_deployed' },
    });
  }
  if (head.deployed <= 1) {
    throw new BreakwaterError('not_found', {
      message: `The route ${name} is at version 1: there is no earlier version to roll back to.`,
      details: { reason: 'no_earlier_version' },
    });
  }
  return head.deployed - 1;
}

/**
 * Rolls `name` back to `to`, or without it to {@link rollbackTarget}.
 * @throws BreakwaterError as {@link deployRouteVersion} and {@link rollbackTarget}.
 */
export async function rollbackRoute(
  routes: RouteStore,
  name: string,
  to?: number,
  options: ParseRouteOptions = {},
): Promise<RouteDeployment> {
  checkName(name);
  const target =
    to ??
    rollbackTarget(
      (await routes.heads()).find((h) => h.name === name),
      name,
    );
  return deployRouteVersion(routes, name, target, options);
}

function checkName(name: string): void {
  if (!ROUTE_NAME.test(name)) {
    throw new BreakwaterError('invalid_payload', {
      message: `A route name is 1 to ${MAX_ROUTE_NAME_LENGTH} characters of A-Z a-z 0-9 . _ -; got ${JSON.stringify(name.slice(0, 200))}.`,
      details: { reason: 'invalid_name' },
    });
  }
}

function unknownVersion(name: string, version: number): BreakwaterError {
  return new BreakwaterError('not_found', {
    message: `The route ${name} has no version ${version}.`,
    details: { reason: 'unknown_version' },
  });
}
