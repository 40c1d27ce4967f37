/**
 * One worker process of `bench/jobs-scale.ts` (forked with an IPC channel, not run by hand): opens the
 * PostgreSQL store on the schema it is given, defines the bench's job type, says `ready`, starts claiming on
 * `go`, answers `cpu` with its CPU time since `go` (`{ cpuMs }`), and stops (graceful) on `stop`. Argument: JSON `{ url, schema, concurrency, workMs }`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { lib } from './lib.js';

const { createJobs, openPostgresStore } = lib;

const { url, schema, concurrency, workMs } = JSON.parse(process.argv[2] ?? '') as {
  url: string;
  schema: string;
  concurrency: number;
  workMs: number;
};

const store = await openPostgresStore({ url, schema });
const jobs = createJobs({ store });
// `workMs` > 0 stands for a handler that waits on something (an upstream call), 0 for a no-op.
jobs.defineJob('bench.scale', workMs > 0 ? () => sleep(workMs) : () => undefined, { concurrency });
let cpuAtGo: NodeJS.CpuUsage | undefined;
process.on('message', (message) => {
  if (message === 'go') {
    cpuAtGo = process.cpuUsage();
    jobs.start();
  }
  if (message === 'cpu') {
    // This process's CPU time since `go`, ms (user + system).
    const used = process.cpuUsage(cpuAtGo);
    process.send!({ cpuMs: (used.user + used.system) / 1000 });
  }
  if (message === 'stop') {
    void jobs
      .stop({ graceMs: 1_000 })
      .then(() => store.close())
      .then(() => process.exit(0));
  }
});
process.send!('ready');
