/**
 * The package as a user gets it: `npm pack` (which builds through `prepack`), the tarball installed with
 * `npm install <tarball> zod` (the README's install) into two fresh projects, a CommonJS one (`npm init -y`) and
 * an ES module one (`"type": "module"`), then the README's own code run there: the command's help, the
 * README's app served in JavaScript and in TypeScript and answering MCP tool calls from the official SDK's
 * client, `import` and `require` of the root entry, and `tsc` over the README's TypeScript against the
 * published declarations. The only network is the package registry (packages come from the local npm cache
 * when it has them); the whole file skips with a printed reason when the registry cannot be reached.
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, until, useCleanups } from '../e2e/support.js';
import { startCommand, type RunningCommand as Running } from '../support/child.js';

const defer = useCleanups();
const root = fileURLToPath(new URL('../../', import.meta.url));
/** npm and npx next to this node (the ones `npm test` runs with), else the first on PATH. */
const bin = (name: string) =>
  existsSync(join(dirname(process.execPath), name)) ? join(dirname(process.execPath), name) : name;
const NPM = bin('npm');
const NPX = bin('npx');
/** Building, packing and two installs, on a busy 2-core machine. */
const SETUP_MS = 300_000;
/** npx, then the CLI, then tsx for a TypeScript app, each a process start. */
const SLOW = 60_000;

/** The README's code blocks whose first line names a file (`// my-app.mjs`), as written, by file name. */
function readmeFiles(markdown: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const [, name, body] of markdown.matchAll(
    /^```[a-z]+\n\/\/ ([\w.-]+\.[cm]?[jt]s)\n([\s\S]*?)^```$/gm,
  )) {
    if (files[name!] !== undefined) throw new Error(`README.md has two code blocks named ${name}`);
    files[name!] = `// ${name}\n${body}`;
  }
  return files;
}

const README = readmeFiles(readFileSync(join(root, 'README.md'), 'utf8'));

/**
 * The environment of every command: the caller's minus what picks a store, a port or an app, and minus the
 * `npm_*` variables `npm test` sets for its own package (npm would read them as configuration), except
 * where the cache and the registry are.
 */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, npm_config_update_notifier: 'false', ...extra };
  for (const name of Object.keys(env)) {
    if (
      /^npm_/i.test(name) &&
      !/^npm_config_(cache|registry|userconfig|update_notifier|better_sqlite3_local_prebuilds)$/i.test(name)
    ) {
      delete env[name];
    }
  }
  for (const name of ['DATABASE_URL', 'BREAKWATER_DB', 'BREAKWATER_APP', 'BREAKWATER_HOST', 'PORT']) {
    delete env[name];
  }
  return env;
}

/** Why the suite cannot run here (the registry unreachable), or undefined. */
async function unreachableRegistry(): Promise<string | undefined> {
  const registry = spawnSync(NPM, ['config', 'get', 'registry'], { env: cleanEnv(), encoding: 'utf8' })
    .stdout.trim()
    .replace(/\/?$/, '/');
  try {
    // Any answer will do (a mirror may not serve the ping): only a network failure means unreachable.
    await fetch(`${registry}-/ping`, { signal: AbortSignal.timeout(10_000) });
    return undefined;
  } catch (error) {
    return `the package registry ${registry} cannot be reached (${(error as Error).message})`;
  }
}

const skipReason = await unreachableRegistry();
if (skipReason !== undefined) console.log(`The pack-and-install test skipped: ${skipReason}.`);

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; rejects after `timeoutMs` (the command is killed). */
function run(command: string, args: string[], cwd: string, env = cleanEnv(), timeoutMs = SLOW): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} took over ${timeoutMs} ms:\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Like {@link run}, rejecting with the output unless the command exits 0. */
async function succeed(
  command: string,
  args: string[],
  cwd: string,
  env?: NodeJS.ProcessEnv,
  timeoutMs?: number,
) {
  const ran = await run(command, args, cwd, env, timeoutMs);
  if (ran.code !== 0) {
    throw new Error(`${command} ${args.join(' ')} exited ${ran.code}:\n${ran.stdout}\n${ran.stderr}`);
  }
  return ran;
}

/** A long-running child in a process group of its own; killed with its children after the test. */
function start(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Running {
  const running = startCommand(command, args, { cwd, env, group: true }, defer);
  return { ...running, waitFor: (pattern) => running.waitFor(pattern, 40_000) };
}

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix)).flatMap((name) => {
    const path = join(prefix, name);
    return statSync(join(dir, path)).isDirectory() ? filesUnder(dir, path) : [path];
  });
}

/**
 * A stand-in for the prebuilt better-sqlite3 binary its install script would download from GitHub (a
 * network this test does not use): the one this repository's install built, under the name prebuild-install
 * looks for in `npm_config_better_sqlite3_local_prebuilds`. When its version or ABI differs from the one installed, the
 * script compiles instead, which is slower and as correct.
 */
function localPrebuild(into: string): Record<string, string> {
  const driver = join(root, 'node_modules', 'better-sqlite3');
  const { version } = JSON.parse(readFileSync(join(driver, 'package.json'), 'utf8')) as { version: string };
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  const made = spawnSync('tar', ['czf', join(into, name), '-C', driver, 'build/Release/better_sqlite3.node']);
  return made.status === 0 ? { npm_config_better_sqlite3_local_prebuilds: into } : {};
}

/** Whether this Node loads ES modules with `require` without a flag (20.19+, 22.12+, 23+). */
function requireEsm(): boolean {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  return major >= 23 || (major === 22 && minor >= 12) || (major === 20 && minor >= 19);
}

/**
 * Why `require('breakwater')` cannot work here, or undefined: a Node without require(esm), or a package whose
 * `exports` gives `require` no condition (Node then refuses with ERR_PACKAGE_PATH_NOT_EXPORTED; the entry
 * points' `default` conditions fix that, and this second reason should then be removed).
 */
function requireSkipped(): string | undefined {
  if (!requireEsm()) return `Node ${process.versions.node} has no require(esm) (20.19+, 22.12+)`;
  return undefined;
}

const work = mkdtempSync(join(tmpdir(), 'breakwater-install-'));
const cjs = join(work, 'cjs');
const esm = join(work, 'esm');
let tarball = '';
let installed = { cjs: '', esm: '' };

describe.skipIf(skipReason !== undefined)('the packed package, installed in a fresh project', () => {
  beforeAll(async () => {
    const packed = await succeed(
      NPM,
      ['pack', '--pack-destination', work, '--silent'],
      root,
      cleanEnv(),
      SETUP_MS,
    );
    tarball = join(work, packed.stdout.trim().split('\n').at(-1)!);
    const prebuilds = mkdtempSync(join(work, 'prebuilds-'));
    const env = cleanEnv(localPrebuild(prebuilds));
    const install = async (dir: string, type: 'commonjs' | 'module') => {
      mkdirSync(dir);
      await succeed(NPM, ['init', '-y'], dir, env);
      if (type === 'module') await succeed(NPM, ['pkg', 'set', 'type=module'], dir, env);
      const ran = await succeed(
        NPM,
        ['install', tarball, 'zod', '--prefer-offline', '--no-audit', '--no-fund'],
        dir,
        env,
        SETUP_MS,
      );
      return `${ran.stdout}\n${ran.stderr}`;
    };
    const [cjsOut, esmOut] = await Promise.all([install(cjs, 'commonjs'), install(esm, 'module')]);
    installed = { cjs: cjsOut, esm: esmOut };
    for (const dir of [cjs, esm]) {
      for (const [name, text] of Object.entries(README)) writeFileSync(join(dir, name), text);
    }
    // The README's JavaScript app, as a plain .js file where the package is an ES module one.
    writeFileSync(join(esm, 'my-app.js'), README['my-app.mjs']!);
  }, SETUP_MS);

  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('the README names its files: the app in JavaScript and TypeScript, the weather stand-in, a pipeline', () => {
    expect(Object.keys(README).sort()).toEqual(['my-app.mjs', 'my-app.ts', 'pipeline.ts', 'weather.mjs']);
  });

  it('the tarball holds the build, the dashboard, the README and package.json, and no test code', () => {
    const listed = spawnSync('tar', ['tzf', tarball], { encoding: 'utf8' });
    const files = listed.stdout
      .trim()
      .split('\n')
      .map((file) => file.replace(/^package\//, ''));
    expect(files).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'dist/entries/index.js',
        'dist/entries/index.d.ts',
      ]),
    );
    expect(files).toContain('dist/cli/main.js');
    expect(files).toContain('web/index.html');
    expect(files.filter((file) => !/^(dist|web)\//.test(file)).sort()).toEqual(['README.md', 'package.json']);
    expect(files.filter((file) => /\.test\.|contract|fixture|test-support|\.map$/.test(file))).toEqual([]);
    const dist = join(cjs, 'node_modules', 'breakwater', 'dist');
    const withVitest = filesUnder(dist).filter((file) =>
      readFileSync(join(dist, file), 'utf8').includes('vitest'),
    );
    expect(withVitest).toEqual([]);
  });

  it('installs without an engine or override warning', () => {
    for (const output of [installed.cjs, installed.esm]) {
      expect(output).not.toMatch(/EBADENGINE|override/i);
      expect(output).toMatch(/added \d+ packages/);
    }
  });

  it(
    'npx breakwater --help prints the usage',
    async () => {
      const ran = await succeed(NPX, ['breakwater', '--help'], cjs);
      expect(ran.stdout.split('\n')[0]).toBe('Usage: breakwater <command> [options]');
    },
    SLOW,
  );

  /** Runs the README's weather stand-in on a free port; resolves with its URL. */
  async function weather(dir: string): Promise<Running & { url: string }> {
    const service = start(process.execPath, ['weather.mjs'], dir, cleanEnv({ WEATHER_PORT: '0' }));
    const [, url] = await service.waitFor(/weather service at (http:\/\/\S+)/);
    return { ...service, url: url! };
  }

  /** `npx breakwater serve --app <app>` on a free port and its own SQLite file; resolves with its URL. */
  async function serve(dir: string, app: string, weatherUrl: string): Promise<Running & { url: string }> {
    const db = join(dir, 'data', `${app}.db`);
    const args = ['breakwater', 'serve', '--app', app, '--port', '0', '--db', db];
    const gateway = start(NPX, args, dir, cleanEnv({ WEATHER_URL: weatherUrl }));
    const [, url] = await gateway.waitFor(/gateway listening at (http:\/\/\S+)/);
    await gateway.waitFor(/\n {2}store .*\n/); // the banner's last line
    return { ...gateway, url: url! };
  }

  const day = (n: number) => ({
    city: 'Lisbon',
    day: n,
    sky: ['clear', 'cloudy', 'rain'][n % 3],
    high_c: 18 + n,
  });

  for (const [project, app] of [
    ['cjs', 'my-app.mjs'],
    ['cjs', 'my-app.ts'],
    ['esm', 'my-app.js'],
    ['esm', 'my-app.ts'],
  ] as const) {
    it(
      `${project === 'cjs' ? 'CommonJS' : 'ES module'} project: serve --app ${app} answers the README's tools`,
      async (context) => {
        const dir = project === 'cjs' ? cjs : esm;
        if (project === 'cjs' && app.endsWith('.ts') && requireSkipped() !== undefined) {
          console.log(`serve --app ${app} in a CommonJS project skipped: ${requireSkipped()}`);
          context.skip();
        }
        const service = await weather(dir);
        const gateway = await serve(dir, app, service.url);
        const mcp = await connect(defer, `${gateway.url}/mcp`);

        expect((await mcp.call('forecast', { city: 'Lisbon' })).structuredContent).toEqual(day(1));
        const started = await mcp.call('start_report', { city: 'Lisbon' });
        const jobId: string = started.structuredContent.job_id;
        expect(jobId).toMatch(/\S/);
        let status: Record<string, unknown> = {};
        await until(
          async () => {
            status = (await mcp.call('get_job_status', { job_id: jobId })).structuredContent;
            return status.status === 'completed' || status.status === 'failed';
          },
          'the report job to finish',
          20_000,
        );
        expect(status).toMatchObject({
          status: 'completed',
          result: { city: 'Lisbon', days: [day(1), day(2), day(3)] },
        });

        // The README's promise: with the weather service gone, the model reads an honest error.
        process.kill(-service.child.pid!, 'SIGTERM');
        await service.exited;
        const failing = await mcp.call('forecast', { city: 'Lisbon' });
        expect(failing.isError).toBe(true);
        expect(failing.structuredContent.error.code).toBe('weather_service_failing');

        await mcp.close();
        process.kill(-gateway.child.pid!, 'SIGINT'); // a Ctrl-C: npx and the gateway both get it
        await gateway.exited; // npx ends by the signal itself (no exit code): the gateway's last line tells
        expect(gateway.stdout().trimEnd().split('\n').at(-1)).toBe('breakwater: stopped');
      },
      SLOW,
    );
  }

  it(
    "import('breakwater') from an ES module and from CommonJS",
    async () => {
      const probe = `const bw = await import('breakwater'); console.log(typeof bw.retry, typeof bw.BreakwaterError);`;
      const fromEsm = await succeed(process.execPath, ['--input-type=module', '-e', probe], esm);
      expect(fromEsm.stdout.trim()).toBe('function function');
      const fromCjs = await succeed(process.execPath, ['-e', `(async () => { ${probe} })()`], cjs);
      expect(fromCjs.stdout.trim()).toBe('function function');
    },
    SLOW,
  );

  it(
    "require('breakwater') from CommonJS (Node's require(esm))",
    async (context) => {
      const reason = requireSkipped();
      if (reason !== undefined) {
        console.log(`require('breakwater') skipped: ${reason}`);
        context.skip();
      }
      const probe = `const bw = require('breakwater'); console.log(typeof bw.retry, typeof bw.BreakwaterError);`;
      const ran = await succeed(process.execPath, ['-e', probe], cjs);
      expect(ran.stdout.trim()).toBe('function function');
    },
    SLOW,
  );

  it(
    "tsc --noEmit accepts the README's TypeScript against the published declarations",
    async () => {
      writeFileSync(
        join(esm, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            module: 'nodenext',
            target: 'es2022',
            strict: true,
            noEmit: true,
            skipLibCheck: true,
            types: ['node'],
            typeRoots: [join(root, 'node_modules', '@types')],
          },
          files: ['my-app.ts', 'pipeline.ts'],
        }),
      );
      const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
      const ran = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], esm);
      expect(`${ran.stdout}${ran.stderr}`).toBe('');
      expect(ran.code).toBe(0);
    },
    SLOW,
  );
});
