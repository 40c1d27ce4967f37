/**
 * The dashboard's files (web/ at the package root: plain HTML, JavaScript and CSS, no build step), read once
 * and kept in memory. Only the files listed here are served: a request names a file, never a path.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The dashboard's files and their media types. */
export const WEB_FILES: Readonly<Record<string, string>> = {
  'index.html': 'text/html; charset=utf-8',
  'login.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'charts.js': 'text/javascript; charset=utf-8',
  'login.js': 'text/javascript; charset=utf-8',
  'jobs.js': 'text/javascript; charset=utf-8',
  'render.js': 'text/javascript; charset=utf-8',
  'style.css': 'text/css; charset=utf-8',
};

/**
 * web/ at the package root: three levels up from this file, as src/server/admin/ and as
 * dist/server/admin/ alike.
 */
export const DEFAULT_WEB_ROOT = fileURLToPath(new URL('../../../web/', import.meta.url));

/** Reads the dashboard's files from a folder, each once. */
export class WebFiles {
  private readonly cache = new Map<string, Promise<Buffer>>();

  constructor(private readonly root: string = DEFAULT_WEB_ROOT) {}

  /** The file and its media type, or undefined when the name is not one of {@link WEB_FILES}. */
  async get(name: string): Promise<{ body: Buffer; type: string } | undefined> {
    const type = WEB_FILES[name];
    if (type === undefined || !Object.hasOwn(WEB_FILES, name)) return undefined;
    let body = this.cache.get(name);
    if (body === undefined) {
      body = readFile(join(this.root, name));
      // A failed read (a file missing from the install) is tried again on the next request.
      body.catch(() => this.cache.delete(name));
      this.cache.set(name, body);
    }
    return { body: await body, type };
  }
}
