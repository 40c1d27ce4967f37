import type * as Root from '../src/entries/index.js';
import type * as Ai from '../src/entries/ai.js';
import type * as Gateway from '../src/entries/gateway.js';
import type * as Jobs from '../src/entries/jobs.js';
import type * as Mcp from '../src/entries/mcp.js';
import type * as Postgres from '../src/entries/postgres.js';
import type * as Server from '../src/entries/server.js';
import type * as Sqlite from '../src/entries/sqlite.js';
import type * as Webhooks from '../src/entries/webhooks.js';

/** The entries the benches use, merged into one namespace. */
type Library = typeof Root &
  typeof Ai &
  typeof Gateway &
  typeof Jobs &
  typeof Mcp &
  typeof Postgres &
  typeof Server &
  typeof Sqlite &
  typeof Webhooks;

const ENTRIES = ['index', 'ai', 'gateway', 'jobs', 'mcp', 'postgres', 'server', 'sqlite', 'webhooks'];

/**
 * The library under test, loaded as its users load it: the compiled package in `dist/` (`npm run bench` builds
 * it first), one file per entry (`breakwater`, `breakwater/jobs`, …). tsx, which runs the bench files, would
 * otherwise compile `src/` on the fly with esbuild's `keepNames`, which wraps every function made at run time
 * (closures made per job, per request) in a `__name` call, so the sources run slower than the package does.
 * `BENCH_SOURCE=1` measures `src/` instead (no build needed).
 */
export const lib = Object.assign(
  {},
  ...(await Promise.all(
    ENTRIES.map(
      (entry) =>
        import(
          process.env.BENCH_SOURCE === '1' ? `../src/entries/${entry}.js` : `../dist/entries/${entry}.js`
        ),
    ),
  )),
) as Library;
