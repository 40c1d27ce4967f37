/**
 * A `node --import` hook that appends the URL of every module resolved through the ESM loader, one a line,
 * to the file named by `BREAKWATER_LOAD_LOG`. Works on Node 20.6+ (`module.register`); a package's own
 * `require` calls are not seen, but the package itself is, as the entry imports it.
 */
import { register } from 'node:module';

const hook = `
import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(process.env.BREAKWATER_LOAD_LOG, result.url + '\\n');
  return result;
}`;
register(`data:text/javascript,${encodeURIComponent(hook)}`);
