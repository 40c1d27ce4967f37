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
  let parsed: { positionals: string[]; values: { help?: boolean; version?: boolean } };
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: { help: { type: 'boolean', short: 'h' }, version: { type: 'boolean', short: 'v' } },
    });
  } catch (error) {
    console.error(`breakwater: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { positionals, values } = parsed;
  const command = positionals[0];
  if (values.help === true || command === 'help') {
    console.log(USAGE);
    return 0;
  }
  if (values.version === true || command === 'version') {
    console.log(version());
    return 0;
  }
  if (command === undefined) {
    console.log(USAGE);
    return 0;
  }
  if (command === 'demo') {
    const { runDemo } = await import('./demo.js');
    return runDemo(positionals.slice(1));
  }
  console.error(`breakwater: unknown command '${command}'\n\n${USAGE}`);
  return 2;
}

process.exitCode = await main(process.argv.slice(2));
