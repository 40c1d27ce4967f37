/**
 * `breakwater audit verify|tail`: the tamper-evident audit log from a terminal, straight against the store.
 * A keyed chain (`BREAKWATER_AUDIT_KEY` in the processes that wrote it) verifies only with the same key.
 */
import { verifyAudit } from '../operations/index.js';
import { CliError, EXIT, openExistingStoreForCli } from './context.js';
import { auditKey } from '../gateway/operations-runtime.js';
import { integerOption, parseSubcommand } from './subcommand.js';

export const AUDIT_USAGE = `Usage: breakwater audit <verify|tail> [options]

Subcommands:
  verify           check the whole hash chain; names the first broken record (exit 1) or prints the head
  tail             print the newest records (their stored JSON bodies)

Options:
  --db <url>       the store: postgres://… or a SQLite path (default: $DATABASE_URL, $BREAKWATER_DB,
                   then ./data/breakwater.db)
  --limit <n>      tail: how many records (default 20, at most 1000)
  --json           print JSON instead of text
  -h, --help       show this help

Environment:
  BREAKWATER_AUDIT_KEY   the HMAC key the chain was written with (leave unset for an unkeyed chain)`;

/** Runs `breakwater audit ...`; resolves with the exit code. Output goes to `out`. */
export async function runAuditCommand(
  argv: string[],
  out: (line: string) => void = console.log,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const parsed = parseSubcommand(
    argv,
    {
      command: 'audit',
      usage: AUDIT_USAGE,
      subcommands: { verify: [], tail: [] },
      options: { limit: { type: 'string' } },
    },
    out,
  );
  if ('exit' in parsed) return parsed.exit;
  const { sub, values } = parsed;
  const limit = integerOption('--limit', values.limit, 20, 1, 1000);
  const key = auditKey(env);
  const store = await openExistingStoreForCli(values.db);
  try {
    if (sub === 'tail') {
      const head = await store.audit.head();
      const records = await store.audit.read(Math.max(0, (head?.seq ?? 0) - limit), limit);
      out(values.json === true ? JSON.stringify(records, null, 2) : records.map((r) => r.body).join('\n'));
      return EXIT.ok;
    }
    let result;
    try {
      result = await verifyAudit(store.audit, { hmacKey: key });
    } catch (error) {
      if (error instanceof RangeError)
        throw new CliError(`BREAKWATER_AUDIT_KEY: ${error.message}`, EXIT.usage);
      throw error;
    }
    if (values.json === true) out(JSON.stringify(result, null, 2));
    else if (result.ok) {
      out(`audit chain verified: ${result.records} records, head ${result.headSeq} ${result.headHash}`);
    } else {
      out(
        `audit chain BROKEN at record ${result.brokenSeq}: ${result.reason} (${result.records} records before it verified)`,
      );
    }
    return result.ok ? EXIT.ok : EXIT.failed;
  } finally {
    await store.close();
  }
}
