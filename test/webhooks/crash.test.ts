import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { CrashServerConfig } from './crash-server.js';
import { planStorm, sendStorm, type StormPlan } from './storm-support.js';
import { tempDb, useCleanups } from './support.js';

/**
 * The crash half of the webhook storm proof, with real processes and a real SIGKILL: the gateway runs in a
 * child process on a SQLite file; mid-storm it is killed; a new one is started on the same file and the
 * sender goes on (retrying what got no answer, as a payment platform does). Every event that was ever
 * answered 2xx is handled, and its effect exists exactly once, whichever process ran it.
 */

const defer = useCleanups();
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SERVER = fileURLToPath(new URL('./crash-server.ts', import.meta.url));
const TOTAL = 3_000;
const KILL_AFTER_ACKS = 800;

/** Starts crash-server.ts and resolves with its URL once it listens. */
async function startServer(config: CrashServerConfig): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', SERVER, JSON.stringify(config)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  defer(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start in 10 s: ${stderr}`)), 10_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const message = JSON.parse(line) as { event: string; url: string };
      if (message.event === 'listening') {
        clearTimeout(timer);
        resolve(message.url);
      }
    });
    child.once('exit', () => reject(new Error(`the server exited early: ${stderr}`)));
  });
  return { child, url };
}

function killed(child: ChildProcess): Promise<NodeJS.Signals | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.signalCode);
    else child.once('exit', (_code, signal) => resolve(signal));
  });
}

describe('webhook ingress crash', () => {
  it('SIGKILL mid-storm, restart on the same SQLite file: every event answered 2xx is handled, its effect exactly once', async () => {
    const db = tempDb(defer);
    const config: CrashServerConfig = { db, effects: join(db, '..', 'effects.db'), leaseMs: 1_000 };
    const plan = planStorm(TOTAL, { duplicateShare: 0.3, badShare: 0.05, orders: 100, seed: 11 });

    // 1. The storm against the first process, which is SIGKILLed once KILL_AFTER_ACKS deliveries got a 2xx.
    const first = await startServer(config);
    const acknowledged = new Set<string>();
    let stop = false;
    const phase1 = await sendStorm(first.url, 'payments', plan, {
      connections: 64,
      onAck: (id) => {
        acknowledged.add(id);
        if (acknowledged.size === KILL_AFTER_ACKS) {
          first.child.kill('SIGKILL');
          stop = true;
        }
      },
      stop: () => stop,
    });
    expect(await killed(first.child)).toBe('SIGKILL');
    expect(phase1.badAccepted).toEqual([]);
    const ackedBeforeCrash = new Set(acknowledged);
    expect(ackedBeforeCrash.size).toBeGreaterThanOrEqual(KILL_AFTER_ACKS);
    expect(ackedBeforeCrash.size).toBeLessThan(plan.goodIds.length);

    // 2. A new process on the same file; the sender sends again everything that was not acknowledged.
    const second = await startServer(config);
    const rest: StormPlan = {
      ...plan,
      deliveries: plan.deliveries.filter((d) => !acknowledged.has(d.eventId)),
    };
    const phase2 = await sendStorm(second.url, 'payments', rest, {
      connections: 64,
      onAck: (id) => acknowledged.add(id),
    });
    expect(phase2.transportErrors).toBe(0);
    expect(phase2.badAccepted).toEqual([]);
    expect(acknowledged.size).toBe(plan.goodIds.length);

    // 3. Every acknowledged event is handled (some by the first process, the rest after the restart,
    // including jobs the first one held when it died), each effect exactly once.
    const effects = new Database(config.effects, { readonly: true, timeout: 5_000 });
    defer(() => effects.close());
    const count = () => (effects.prepare('SELECT count(*) AS n FROM effects').get() as { n: number }).n;
    const deadline = Date.now() + 30_000;
    while (count() < plan.goodIds.length && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const rows = effects.prepare('SELECT event_id AS id, pid FROM effects').all() as {
      id: string;
      pid: number;
    }[];
    expect(rows.length).toBe(plan.goodIds.length);
    expect(new Set(rows.map((r) => r.id))).toEqual(new Set(plan.goodIds));
    for (const id of ackedBeforeCrash) expect(rows.some((r) => r.id === id)).toBe(true);
    const pids = new Set(rows.map((r) => r.pid));
    expect(pids).toEqual(new Set([first.child.pid, second.child.pid]));
    const runs = effects.prepare('SELECT count(*) AS n FROM handler_runs').get() as { n: number };
    console.log(
      `crash: ${ackedBeforeCrash.size} acknowledged before the SIGKILL, ${plan.goodIds.length} in all; ` +
        `${runs.n} handler runs for ${rows.length} effects`,
    );
  }, 60_000);
});
