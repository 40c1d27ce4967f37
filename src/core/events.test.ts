import { afterEach, describe, expect, it, vi } from 'vitest';
import { EventSource } from './events.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('EventSource', () => {
  it('delivers each event to every listener in subscription order', () => {
    const source = new EventSource<number>();
    const log: string[] = [];
    expect(source.hasListeners).toBe(false);
    source.on((n) => log.push(`a${n}`));
    source.on((n) => log.push(`b${n}`));
    expect(source.hasListeners).toBe(true);
    source.emit(1);
    source.emit(2);
    expect(log).toEqual(['a1', 'b1', 'a2', 'b2']);
  });

  it('dispose unsubscribes and is idempotent', () => {
    const source = new EventSource<number>();
    const log: number[] = [];
    const listener = (n: number): number => log.push(n);
    const first = source.on(listener);
    const second = source.on(listener);
    source.emit(1);
    expect(log).toEqual([1, 1]);
    first.dispose();
    first.dispose();
    source.emit(2);
    // Only the disposed subscription went away, even though both use the same function.
    expect(log).toEqual([1, 1, 2]);
    expect(source.hasListeners).toBe(true);
    second.dispose();
    source.emit(3);
    expect(log).toEqual([1, 1, 2]);
    expect(source.hasListeners).toBe(false);
  });

  it('a listener that removes itself during emit does not make its neighbour miss the event', () => {
    const source = new EventSource<string>();
    const log: string[] = [];
    const self = source.on((e) => {
      log.push(`self:${e}`);
      self.dispose();
    });
    source.on((e) => log.push(`next:${e}`));
    source.emit('x');
    source.emit('y');
    expect(log).toEqual(['self:x', 'next:x', 'next:y']);
  });

  it('a listener added during emit first hears the next event', () => {
    const source = new EventSource<string>();
    const log: string[] = [];
    let added = false;
    source.on((e) => {
      log.push(`a:${e}`);
      if (!added) {
        added = true;
        source.on((e2) => log.push(`late:${e2}`));
      }
    });
    source.emit('1');
    source.emit('2');
    expect(log).toEqual(['a:1', 'a:2', 'late:2']);
  });

  it('a throwing listener does not stop the others; its error becomes a process warning', () => {
    const warnings: (string | Error)[] = [];
    vi.spyOn(process, 'emitWarning').mockImplementation((warning: string | Error) => {
      warnings.push(warning);
    });
    const source = new EventSource<number>();
    const log: string[] = [];
    const boom = new Error('listener bug');
    source.on(() => log.push('before'));
    source.on(() => {
      throw boom;
    });
    source.on(() => log.push('after'));
    expect(() => source.emit(1)).not.toThrow();
    expect(log).toEqual(['before', 'after']);
    expect(warnings).toHaveLength(1);
    const warning = warnings[0] as Error;
    expect(warning.name).toBe('BreakwaterListenerWarning');
    expect(warning.message).toBe('An event listener threw: listener bug');
    expect(warning.cause).toBe(boom);
  });
});
