#!/usr/bin/env node
/**
 * The `breakwater` command. It grows with later issues (serve, worker, jobs, ops, audit); today it reports
 * its version and runs the policy demo.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const USAGE = `Usage: breakwater <command> [options]

Commands:
  demo        run a resilience pipeline against a flaky in-process service and print what happens
  version     print the version

Options:
  -h, --help  show this help`;

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

export async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: false,
    options: { help: { type: 'boolean', short: 'h' }, version: { type: 'boolean', short: 'v' } },
  });
  const command = positionals[0];
  if (values.version === true || command === 'version') {
    console.log(version());
    return 0;
  }
  if (command === 'demo') {
    const { runDemo } = await import('./demo.js');
    return runDemo(argv.slice(1));
  }
  if (values.help === true || command === undefined) {
    console.log(USAGE);
    return 0;
  }
  console.error(`breakwater: unknown command '${command}'\n\n${USAGE}`);
  return 2;
}

process.exitCode = await main(process.argv.slice(2));
