import type * as Breakwater from '../src/index.js';

/**
 * The library under test, loaded as its users load it: the compiled package in `dist/` (`npm run bench` builds
 * it first). tsx, which runs the bench files, would otherwise compile `src/` on the fly with esbuild's
 * `keepNames`, which wraps every function made at run time (closures made per job, per request) in a
 * `__name` call, so the sources run slower than the package does. `BENCH_SOURCE=1` measures `src/` instead
 * (no build needed).
 */
export const lib = (await import(
  process.env.BENCH_SOURCE === '1' ? '../src/index.js' : '../dist/index.js'
)) as typeof Breakwater;
