#!/usr/bin/env node
/**
 * The `breakwater` command: `serve` (the gateway), `worker` (a worker-only process), `jobs` (the queue from a
 * terminal), `webhooks`, `ops` and `audit` (the inbox, the operation ledger and the audit log), `routes` (the AI
 * gateway's versioned routes), `keys` (API keys), `prune` (retention), `demo` (the policies in four seconds) and `version`. Exit codes: 0 done, 1 failed (a message
 * says why), 2 bad command line.
 */
import { readFileSync } from 'node:fs';
import { CliError, EXIT } from './context.js';

const USAGE = `Usage: breakwater <command> [options]

Commands:
  serve       run the gateway: MCP at /mcp, job polling and SSE, health checks (and a worker, unless --no-worker)
  worker      run a worker only: claim and run jobs, no HTTP
  jobs        list, show, cancel or retry jobs (breakwater jobs --help)
  webhooks    list, show or replay stored webhook events (breakwater webhooks --help)
  ops         list, show or reconcile side-effecting operations (breakwater ops --help)
  routes      list, show, create, deploy or roll back AI gateway routes (breakwater routes --help)
  keys        create, list or revoke API keys (breakwater keys --help)
  audit       verify the tamper-evident audit log, or print its newest records (breakwater audit --help)
  prune       remove what is past its retention, or count it with --dry-run (breakwater prune --help)
  demo        run a resilience pipeline against a flaky in-process service and print what happens
  version     print the version

Run 'breakwater <command> --help' for a command's options.`;

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

/** Runs the command line `argv` (without node and the script); resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case undefined:
      case 'help':
      case '-h':
      case '--help':
        console.log(USAGE);
        return EXIT.ok;
      case 'version':
      case '-v':
      case '--version':
        console.log(version());
        return EXIT.ok;
      case 'demo': {
        const { runDemo } = await import('./demo.js');
        return await runDemo(rest);
      }
      case 'serve': {
        const { runServe } = await import('./serve-command.js');
        return await runServe(rest);
      }
      case 'worker': {
        const { runWorker } = await import('./serve-command.js');
        return await runWorker(rest);
      }
      case 'webhooks': {
        const { runWebhooksCommand } = await import('./webhooks-command.js');
        return await runWebhooksCommand(rest);
      }
      case 'ops': {
        const { runOpsCommand } = await import('./ops-command.js');
        return await runOpsCommand(rest);
      }
      case 'routes': {
        const { runRoutesCommand } = await import('./routes-command.js');
        return await runRoutesCommand(rest);
      }
      case 'keys': {
        const { runKeysCommand } = await import('./keys-command.js');
        return await runKeysCommand(rest);
      }
      case 'audit': {
        const { runAuditCommand } = await import('./audit-command.js');
        return await runAuditCommand(rest);
      }
      case 'prune': {
        const { runPruneCommand } = await import('./prune-command.js');
        return await runPruneCommand(rest);
      }
      case 'jobs': {
        const { runJobsCommand } = await import('./jobs-command.js');
        return await runJobsCommand(rest);
      }
      default:
        console.error(`breakwater: unknown command '${command}'\n\n${USAGE}`);
        return EXIT.usage;
    }
  } catch (error) {
    if (error instanceof CliError) {
      console.error(`breakwater: ${error.message}`);
      return error.exitCode;
    }
    throw error;
  }
}

process.exitCode = await main(process.argv.slice(2));
