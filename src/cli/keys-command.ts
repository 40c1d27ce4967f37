/**
 * `breakwater keys create|list|revoke`: the gateway's API keys from a terminal, straight against the store (no
 * server needs to run). A key is printed once, by `create`; only its SHA-256 is stored, so it can never be
 * shown again. Running gateways refuse a revoked key within their cache time (5 s by default). Every change
 * is audited, without the secret.
 */
import { isBreakwaterError, SCOPES, systemClock } from '../core/index.js';
import {
  checkApiKeyInput,
  createApiKeys,
  toApiKeyView,
  type ApiKeyInput,
  type ApiKeyView,
} from '../http/keys/index.js';
import type { Store } from '../store/index.js';
import { CliError, EXIT, openExistingStoreForCli, openStoreForCli, storeUrl } from './context.js';
import { table } from './format.js';
import { budgetOptions, durationMs, listOption, metadataOption, rateOptions } from './keys-args.js';
import { auditCliAction } from '../gateway/operations-runtime.js';
import { integerOption, parseSubcommand } from './subcommand.js';

export const KEYS_USAGE = `Usage: breakwater keys <create|list|revoke> [options]

Subcommands:
  create --name <name> --scopes <list>   make a key and print it once: it cannot be shown again
  list                                   the keys, newest first (never their secrets)
  revoke <id>                            refuse a key from now on (running gateways: within 5 s)

A key looks like bw_<16 hex id>_<43 characters>; clients send it as 'Authorization: Bearer <key>'.

Options:
  --db <url>                 the store: postgres://… or a SQLite path (default: $DATABASE_URL, $BREAKWATER_DB,
                             then ./data/breakwater.db; create makes a new SQLite file if there is none)
  --name <name>              create: a name for people (1 to 100 characters)
  --scopes <list>            create: what it may call, comma-separated: ${SCOPES.join(', ')}
                             (admin: everything, every principal's jobs, and the admin API)
  --metadata <k=v,…>         create: metadata bound to the key, e.g. user=alice,team=red,plan=pro; AI rate
                             and spend rules scope by it (repeatable)
  --trusted-backend          create: the caller may add metadata with the x-breakwater-metadata header (a
                             backend calling on behalf of its users); bound keys are never overridden
  --expires-in <duration>    create: 30d, 12h, 90m, 45s, 500ms or ms (default: never)
  --allowed-models <list>    create: the AI models it may call (<provider>/<model> or dynamic/<route>)
  --budget <usd>/<window>    create: its own AI spend budget, e.g. 5/day, 0.5/hour, 2/3600000 (repeatable)
  --rate <n>/<window>        create: its own AI request rate, e.g. 100/min, 5000/day (repeatable)
  --all                      list: revoked keys too
  --limit <n>                list: at most n keys (default 100, at most 1000)
  --json                     print JSON instead of text
  -h, --help                 show this help`;

/** Runs `breakwater keys ...`; resolves with the exit code. Output goes to `out`. */
export async function runKeysCommand(
  argv: string[],
  out: (line: string) => void = console.log,
): Promise<number> {
  const parsed = parseSubcommand(
    argv,
    {
      command: 'keys',
      usage: KEYS_USAGE,
      subcommands: { create: [], list: [], revoke: ['a key id'] },
      options: {
        name: { type: 'string' },
        scopes: { type: 'string', multiple: true },
        metadata: { type: 'string', multiple: true },
        'trusted-backend': { type: 'boolean' },
        'expires-in': { type: 'string' },
        'allowed-models': { type: 'string', multiple: true },
        budget: { type: 'string', multiple: true },
        rate: { type: 'string', multiple: true },
        all: { type: 'boolean' },
        limit: { type: 'string' },
      },
    },
    out,
  );
  if ('exit' in parsed) return parsed.exit;
  const { sub, args, values } = parsed;
  const json = values.json === true;

  if (sub === 'create') {
    const input = createInput(values);
    // Checked before the store opens: a refused command makes no database.
    await cliErrors(async () => checkApiKeyInput(input, systemClock.now()));
    if (values.db !== undefined && values.db.trim() === '') {
      throw new CliError('--db must name a database, got an empty value', EXIT.usage);
    }
    const store = await openStoreForCli(storeUrl(values.db));
    try {
      return await create(store, input, json, out);
    } finally {
      await store.close();
    }
  }

  const limit = integerOption('--limit', values.limit, 100, 1, 1000);
  const store = await openExistingStoreForCli(values.db);
  try {
    const keys = createApiKeys({ store, cacheMs: 0 });
    const now = systemClock.now();
    if (sub === 'list') {
      const list = await keys.list({ includeRevoked: values.all === true, limit });
      const views = list.map((record) => toApiKeyView(record, now));
      out(json ? JSON.stringify(views, null, 2) : formatKeys(views, values.all === true));
      return EXIT.ok;
    }
    const id = args[0]!.replace(/^key:/, '');
    const before = await keys.get(id);
    if (before === undefined) throw new CliError(`there is no key with id ${id}`);
    const after = (await keys.revoke(id))!;
    if (before.revokedAt === null) {
      await auditCliAction(store, {
        action: 'admin.key_revoke',
        target: `key:${id}`,
        data: { name: after.name },
      });
    }
    const view = toApiKeyView(after, now);
    if (json) out(JSON.stringify(view, null, 2));
    else if (before.revokedAt !== null) {
      out(`key ${id} (${after.name}) was already revoked at ${view.revoked_at}; nothing changed`);
    } else {
      out(
        `key ${id} (${after.name}) revoked; running gateways refuse it within their cache time (5 s by default)`,
      );
    }
    return EXIT.ok;
  } finally {
    await store.close();
  }
}

type CreateValues = {
  name?: string;
  scopes?: string[];
  metadata?: string[];
  'trusted-backend'?: boolean;
  'expires-in'?: string;
  'allowed-models'?: string[];
  budget?: string[];
  rate?: string[];
};

/** The key's input from the command line. @throws CliError (exit 2) naming the option. */
function createInput(values: CreateValues): ApiKeyInput {
  if (values.name === undefined)
    throw new CliError(`keys create needs --name <name>\n\n${KEYS_USAGE}`, EXIT.usage);
  const scopes = listOption(values.scopes);
  if (scopes.length === 0) {
    throw new CliError(
      `keys create needs --scopes <list> (${SCOPES.join(', ')})\n\n${KEYS_USAGE}`,
      EXIT.usage,
    );
  }
  for (const scope of scopes) {
    if (!(SCOPES as readonly string[]).includes(scope)) {
      throw new CliError(`--scopes: '${scope}' is not a scope; use ${SCOPES.join(', ')}`, EXIT.usage);
    }
  }
  const models = listOption(values['allowed-models']);
  const budgets = budgetOptions(values.budget);
  const rateRules = rateOptions(values.rate);
  const ai = {
    ...(models.length === 0 ? {} : { allowedModels: models }),
    ...(budgets.length === 0 ? {} : { budgets }),
    ...(rateRules.length === 0 ? {} : { rateRules }),
  };
  return {
    name: values.name,
    scopes,
    metadata: metadataOption(values.metadata),
    trustedBackend: values['trusted-backend'] === true,
    ...(values['expires-in'] === undefined
      ? {}
      : { expiresInMs: durationMs('--expires-in', values['expires-in']) }),
    ai: Object.keys(ai).length === 0 ? null : ai,
  };
}

/** The option each input field comes from, for messages. */
const OPTION_OF: readonly [string, string][] = [
  ['name', '--name'],
  ['scopes', '--scopes'],
  ['metadata', '--metadata'],
  ['expiresInMs', '--expires-in'],
  ['ai.allowedModels', '--allowed-models'],
  ['ai.budgets', '--budget'],
  ['ai.rateRules', '--rate'],
];

/** Runs `action`, turning the key checks' errors into messages naming the option. */
async function cliErrors<T>(action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    if (!isBreakwaterError(error)) throw error;
    const field = String(error.details?.field ?? '');
    const option = OPTION_OF.find(([prefix]) => field === prefix || field.startsWith(`${prefix}.`))?.[1];
    const issue = (error.details?.issues as { message: string }[] | undefined)?.[0]?.message;
    throw new CliError(
      option !== undefined && issue !== undefined ? `${option}: ${issue}` : error.message,
      error.status === 400 ? EXIT.usage : EXIT.failed,
    );
  }
}

async function create(
  store: Store,
  input: ApiKeyInput,
  json: boolean,
  out: (line: string) => void,
): Promise<number> {
  const keys = createApiKeys({ store, cacheMs: 0 });
  const created = await cliErrors(() => keys.create(input));
  const { key, record } = created;
  const view = toApiKeyView(record, record.createdAt);
  await auditCliAction(store, {
    action: 'admin.key_create',
    target: `key:${record.id}`,
    data: {
      name: view.name,
      scopes: view.scopes,
      trusted_backend: view.trusted_backend,
      expires_at: view.expires_at,
    },
  });
  if (json) {
    out(JSON.stringify({ key, ...view }, null, 2));
    return EXIT.ok;
  }
  const expiry = view.expires_at === null ? 'never expires' : `expires ${view.expires_at}`;
  out(
    [
      `created key ${record.id} (${record.name}): scopes ${record.scopes.join(', ')}; ${expiry}`,
      '',
      `    ${key}`,
      '',
      'This is the only time the key is shown: it cannot be shown again (only its hash is stored).',
      'Keep it in a secret manager now; if it is lost, revoke it and create another.',
    ].join('\n'),
  );
  return EXIT.ok;
}

function formatKeys(views: ApiKeyView[], all: boolean): string {
  if (views.length === 0) return all ? 'no keys' : 'no keys (revoked ones are listed with --all)';
  return table([
    ['ID', 'NAME', 'SCOPES', 'METADATA', 'TRUSTED', 'EXPIRES', 'STATE'],
    ...views.map((v) => [
      v.id,
      v.name,
      v.scopes.join(','),
      Object.entries(v.metadata)
        .map(([k, value]) => `${k}=${value}`)
        .join(',') || '-',
      v.trusted_backend ? 'yes' : 'no',
      v.expires_at ?? 'never',
      v.state === 'revoked' ? `revoked ${v.revoked_at}` : v.state,
    ]),
  ]);
}
