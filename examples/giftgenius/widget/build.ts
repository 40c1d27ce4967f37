/**
 * Builds the GiftGenius widget: `view.ts` bundled by esbuild (the ext-apps `App` bridge included) into one
 * inline script of a self-contained HTML page, no file written. The app builds it when the gateway starts
 * (under tsx, like the rest of the example), so `npm start` stays the one command and no build output is
 * committed. The page loads nothing from the network: the hosts' default CSP (no origins) fits it.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const VIEW = fileURLToPath(new URL('./view.ts', import.meta.url));
const TEMPLATE = fileURLToPath(new URL('./page.html', import.meta.url));

let built: Promise<string> | undefined;

/**
 * The widget page (an HTML5 document, UTF-8), built once per process; a failed build is tried again at the
 * next call.
 * @throws Error from esbuild when `view.ts` does not compile.
 */
export function widgetHtml(): Promise<string> {
  built ??= buildPage().catch((error: unknown) => {
    built = undefined;
    throw error;
  });
  return built;
}

async function buildPage(): Promise<string> {
  const result = await build({
    entryPoints: [VIEW],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    logLevel: 'silent',
  });
  // `</script` inside the code would end the inline script early.
  const script = result.outputFiles[0]!.text.replace(/<\/script/gi, '<\\/script');
  const page = readFileSync(TEMPLATE, 'utf8');
  return page.replace('<!-- widget script -->', () => `<script>${script}</script>`);
}
