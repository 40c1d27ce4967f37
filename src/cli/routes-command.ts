/**
 * `breakwater routes list|show|create|deploy|rollback`: the AI gateway's versioned routes from a terminal,
 * straight against the store (no server needs to run). A running gateway picks up a deploy or rollback
 * within its refresh interval (1 s by default), without a restart. Every change is audited.
 */
import { readFileSync } from 'node:fs';
import { createRouteVersion, deployRouteVersion, rollbackRoute, type RouteDeployment } from '../ai/index.js';
import { isBreakwaterError } from '../core/index.js';
import type { RouteHead, Store } from '../store/index.js';
import { CliError, EXIT, openExistingStoreForCli } from './context.js';
import { iso, table } from './format.js';
import { auditCliAction } from '../gateway/operations-runtime.js';
import { integerOption, parseSubcommand } from './subcommand.js';

const MAX_VERSION = 2_147_483_647;

export const ROUTES_USAGE = `Usage: breakwater routes <list|show|create|deploy|rollback> [options]

Subcommands:
  list                               every route with its deployed and newest version
  show <name>                        a route's versions, newest first, and the deployed definition
  create <name> --file <path>        store a new draft version from a JSON definition (checked, not deployed)
  deploy <name> <version>            make that version the deployed one (also an earlier one)
  rollback <name> [--to <version>]   deploy an earlier version: --to, or else the version numbered just below
                                     the deployed one (the store keeps no history of deploys, so after a
                                     rollback or a skipped draft say --to)

Running gateways switch within their refresh interval (1 s by default); requests in flight finish on the
version they started with.

Options:
  --db <url>          the store: postgres://… or a SQLite path (default: $DATABASE_URL, $BREAKWATER_DB,
                      then ./data/breakwater.db)
  --file <path>       create: the route definition (JSON; - reads standard input)
  --note <text>       create: a note kept with the version
  --to <version>      rollback: the version to go back to
  --json              print JSON instead of text
  -h, --help          show this help`;

/** Runs `breakwater routes ...`; resolves with the exit code. Output goes to `out`. */
export async function runRoutesCommand(
  argv: string[],
  out: (line: string) => void = console.log,
  readStdin: () => string = () => readFileSync(0, 'utf8'),
): Promise<number> {
  const parsed = parseSubcommand(
    argv,
    {
      command: 'routes',
      usage: ROUTES_USAGE,
      subcommands: {
        list: [],
        show: ['a route name'],
        create: ['a route name'],
        deploy: ['a route name', 'a version'],
        rollback: ['a route name'],
      },
      options: { file: { type: 'string' }, note: { type: 'string' }, to: { type: 'string' } },
    },
    out,
  );
  if ('exit' in parsed) return parsed.exit;
  const { sub, args, values } = parsed;
  const name = args[0]!;
  const json = values.json === true;
  const version = sub === 'deploy' ? integerOption('version', args[1], 0, 1, MAX_VERSION) : undefined;
  const to = values.to === undefined ? undefined : integerOption('--to', values.to, 0, 1, MAX_VERSION);
  let definition: unknown;
  if (sub === 'create') {
    if (values.file === undefined)
      throw new CliError(`routes create needs --file <path>\n\n${ROUTES_USAGE}`, EXIT.usage);
    definition = readDefinition(values.file, readStdin);
  }

  const store = await openExistingStoreForCli(values.db);
  try {
    switch (sub) {
      case 'list': {
        const heads = await store.routes.heads();
        out(json ? JSON.stringify(heads, null, 2) : formatHeads(heads));
        return EXIT.ok;
      }
      case 'show':
        return await show(store, name, json, out);
      case 'create': {
        const created = await attempt(() =>
          createRouteVersion(store.routes, name, definition, { note: values.note }),
        );
        await auditCliAction(store, {
          action: 'admin.route_create',
          target: `${name}@${created.version}`,
          data: { note: created.note },
        });
        out(
          json
            ? JSON.stringify(created, null, 2)
            : `${name}: version ${created.version} created as a draft; deploy it with 'breakwater routes deploy ${name} ${created.version}'`,
        );
        return EXIT.ok;
      }
      case 'deploy': {
        const done = await attempt(() => deployRouteVersion(store.routes, name, version!));
        await auditDeploy(store, 'admin.route_deploy', name, done);
        out(json ? JSON.stringify(done, null, 2) : describeDeploy(name, done, 'deployed'));
        return EXIT.ok;
      }
      default: {
        const done = await attempt(() => rollbackRoute(store.routes, name, to));
        await auditDeploy(store, 'admin.route_rollback', name, done);
        const how = to === undefined ? ' (the version below the deployed one)' : '';
        out(json ? JSON.stringify(done, null, 2) : `${describeDeploy(name, done, 'rolled back to')}${how}`);
        return EXIT.ok;
      }
    }
  } finally {
    await store.close();
  }
}

async function show(store: Store, name: string, json: boolean, out: (line: string) => void): Promise<number> {
  const versions = await store.routes.versions(name);
  if (versions.length === 0) throw new CliError(`there is no route named ${name}`);
  const head = (await store.routes.heads()).find((h) => h.name === name);
  if (json) {
    out(JSON.stringify({ ...head, versions }, null, 2));
    return EXIT.ok;
  }
  const deployed = head?.deployed ?? null;
  const rows = [
    ['VERSION', 'STATE', 'CREATED', 'NOTE'],
    ...versions.map((v) => [
      String(v.version),
      v.version === deployed ? 'deployed' : 'draft',
      iso(v.createdAt),
      v.note ?? '',
    ]),
  ];
  const live = versions.find((v) => v.version === deployed);
  out(
    [
      `route:     ${name}`,
      `deployed:  ${deployed === null ? 'none' : `${deployed} (since ${iso(head?.deployedAt)})`}`,
      `latest:    ${head?.latest ?? versions[0]!.version}`,
      '',
      table(rows),
      ...(live === undefined
        ? []
        : ['', `definition of version ${live.version}:`, JSON.stringify(live.definition, null, 2)]),
    ].join('\n'),
  );
  return EXIT.ok;
}

function readDefinition(file: string, readStdin: () => string): unknown {
  let text: string;
  try {
    text = file === '-' ? readStdin() : readFileSync(file, 'utf8');
  } catch (error) {
    throw new CliError(`cannot read --file ${file}: ${(error as Error).message}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new CliError(`--file ${file} is not JSON: ${(error as Error).message}`);
  }
}

/** Runs `action`, turning the route checks' errors into messages for the terminal. */
async function attempt<T>(action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    if (isBreakwaterError(error)) {
      const issues = error.details?.issues as { path: string; message: string }[] | undefined;
      const more = (issues ?? []).slice(1).map((i) => `\n  also at ${i.path}: ${i.message}`);
      throw new CliError(`${error.message}${more.join('')}`);
    }
    throw error;
  }
}

function describeDeploy(name: string, done: RouteDeployment, verb: string): string {
  const now = done.head.deployed;
  if (done.previous === now) return `${name}: version ${now} is already deployed; nothing changed`;
  return `${name}: ${verb} version ${now} (was ${done.previous ?? 'none'})`;
}

async function auditDeploy(store: Store, action: string, name: string, done: RouteDeployment): Promise<void> {
  if (done.previous === done.head.deployed) return;
  await auditCliAction(store, {
    action,
    target: `${name}@${done.head.deployed}`,
    data: { previous: done.previous },
  });
}

function formatHeads(heads: RouteHead[]): string {
  if (heads.length === 0) return 'no routes';
  return table([
    ['NAME', 'DEPLOYED', 'LATEST', 'DEPLOYED AT'],
    ...heads.map((h) => [
      h.name,
      h.deployed === null ? '-' : String(h.deployed),
      String(h.latest),
      iso(h.deployedAt),
    ]),
  ]);
}
