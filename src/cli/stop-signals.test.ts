import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.js';
import { watchStopSignals, type SignalSource } from './stop-signals.js';

function harness(sameRequestMs?: number) {
  const clock = new FakeClock();
  const source = new EventEmitter();
  const lines: string[] = [];
  const exits: number[] = [];
  const signals = watchStopSignals({
    out: (line) => lines.push(line),
    clock,
    source: source as unknown as SignalSource,
    exit: (code) => exits.push(code),
    sameRequestMs,
  });
  const send = (signal: 'SIGINT' | 'SIGTERM') => source.emit(signal, signal);
  return { clock, source, lines, exits, signals, send };
}

const SHUTTING_DOWN = 'breakwater: SIGINT received, shutting down (send it again to exit at once)';

describe('watchStopSignals', () => {
  it('npm forwarding a Ctrl-C: copies within 500 ms of the first are the same request', async () => {
    const h = harness();
    h.send('SIGINT');
    expect(await h.signals.requested).toBe('SIGINT');
    h.clock.tick(5);
    h.send('SIGINT');
    h.clock.tick(494);
    h.send('SIGTERM');
    expect(h.lines).toEqual([SHUTTING_DOWN]);
    expect(h.exits).toEqual([]);
  });

  it('a signal 500 ms or more after the first exits at once with code 1', () => {
    const h = harness();
    h.send('SIGINT');
    h.clock.tick(499);
    h.send('SIGINT');
    expect(h.exits).toEqual([]);
    h.clock.tick(1);
    h.send('SIGINT');
    expect(h.exits).toEqual([1]);
    expect(h.lines).toEqual([
      SHUTTING_DOWN,
      'breakwater: SIGINT received again, exiting at once (running jobs are taken over when their lease lapses)',
    ]);
  });

  it('the window is an option; 0 makes every later signal exit', () => {
    const h = harness(0);
    h.send('SIGTERM');
    h.send('SIGTERM');
    expect(h.exits).toEqual([1]);
    expect(h.lines[0]).toBe('breakwater: SIGTERM received, shutting down (send it again to exit at once)');
  });

  it('dispose removes both listeners', () => {
    const h = harness();
    expect([h.source.listenerCount('SIGINT'), h.source.listenerCount('SIGTERM')]).toEqual([1, 1]);
    h.signals.dispose();
    expect([h.source.listenerCount('SIGINT'), h.source.listenerCount('SIGTERM')]).toEqual([0, 0]);
  });

  it('a bad window is refused at construction', () => {
    for (const bad of [-1, 0.5, Number.NaN]) {
      expect(() => harness(bad)).toThrow(
        `watchStopSignals: sameRequestMs must be an integer >= 0, got ${String(bad)}`,
      );
    }
  });
});
