import { getEventListeners, setMaxListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { LinkedAbort, abortReason, neverAbortedSignal } from './signals.js';

const listeners = (signal: AbortSignal): number => getEventListeners(signal, 'abort').length;

describe('LinkedAbort', () => {
  it('aborts when its parent aborts, with the parent reason, and detaches itself', () => {
    const parent = new AbortController();
    const link = new LinkedAbort(parent.signal);
    expect(listeners(parent.signal)).toBe(1);
    expect(link.signal.aborted).toBe(false);
    expect(link.signal).toBe(link.controller.signal);
    const reason = new Error('client went away');
    parent.abort(reason);
    expect(link.signal.aborted).toBe(true);
    expect(link.signal.reason).toBe(reason);
    expect(listeners(parent.signal)).toBe(0);
  });

  it('dispose removes its listener and stops following the parent', () => {
    const parent = new AbortController();
    const link = new LinkedAbort(parent.signal);
    link.dispose();
    expect(listeners(parent.signal)).toBe(0);
    link.dispose(); // idempotent
    expect(listeners(parent.signal)).toBe(0);
    parent.abort(new Error('late'));
    expect(link.signal.aborted).toBe(false);
  });

  it('an already-aborted parent aborts the link at once and leaves no listener anywhere', () => {
    const live = new AbortController();
    const later = new AbortController();
    const reason = new Error('already');
    const link = new LinkedAbort(live.signal, AbortSignal.abort(reason), later.signal);
    expect(link.signal.aborted).toBe(true);
    expect(link.signal.reason).toBe(reason);
    expect(listeners(live.signal)).toBe(0);
    expect(listeners(later.signal)).toBe(0);
  });

  it('follows whichever of several parents aborts first, and detaches from all', () => {
    const a = new AbortController();
    const b = new AbortController();
    const c = new AbortController();
    const link = new LinkedAbort(a.signal, undefined, b.signal, c.signal);
    expect([listeners(a.signal), listeners(b.signal), listeners(c.signal)]).toEqual([1, 1, 1]);
    b.abort('b');
    expect(link.signal.reason).toBe('b');
    expect([listeners(a.signal), listeners(b.signal), listeners(c.signal)]).toEqual([0, 0, 0]);
    a.abort('a');
    expect(link.signal.reason).toBe('b');
  });

  it('abort() aborts the link only, with its reason, and detaches', () => {
    const parent = new AbortController();
    const link = new LinkedAbort(parent.signal);
    link.abort('timeout');
    expect(link.signal.reason).toBe('timeout');
    expect(parent.signal.aborted).toBe(false);
    expect(listeners(parent.signal)).toBe(0);
  });

  it('with no parents it aborts only by hand', () => {
    const link = new LinkedAbort(undefined);
    expect(link.signal.aborted).toBe(false);
    link.abort();
    expect((link.signal.reason as DOMException).name).toBe('AbortError');
  });

  it('10,000 concurrent links on a long-lived parent leave 0 listeners once disposed', () => {
    const parent = new AbortController();
    setMaxListeners(20_000, parent.signal); // silences Node's leak warning for this deliberate fan-out
    const links = Array.from({ length: 10_000 }, () => new LinkedAbort(parent.signal));
    expect(listeners(parent.signal)).toBe(10_000);
    for (const link of links) link.dispose();
    expect(listeners(parent.signal)).toBe(0);
    parent.abort();
    expect(links.filter((link) => link.signal.aborted)).toHaveLength(0);
  });

  it('10,000 links made and disposed one after another leave 0 listeners', () => {
    const parent = new AbortController();
    for (let i = 0; i < 10_000; i++) new LinkedAbort(parent.signal, neverAbortedSignal).dispose();
    expect(listeners(parent.signal)).toBe(0);
    expect(listeners(neverAbortedSignal)).toBe(0);
  });
});

describe('abortReason / neverAbortedSignal', () => {
  it('returns the signal reason, or an AbortError DOMException when there is none', () => {
    const controller = new AbortController();
    controller.abort('why');
    expect(abortReason(controller.signal)).toBe('why');
    const bare = new AbortController();
    bare.abort();
    expect(abortReason(bare.signal)).toBe(bare.signal.reason);
    const noReason = { aborted: true, reason: undefined } as unknown as AbortSignal;
    const made = abortReason(noReason) as DOMException;
    expect(made).toBeInstanceOf(DOMException);
    expect([made.name, made.message]).toEqual(['AbortError', 'This operation was aborted']);
  });

  it('neverAbortedSignal is not aborted', () => {
    expect(neverAbortedSignal.aborted).toBe(false);
    expect(neverAbortedSignal.reason).toBeUndefined();
  });
});
