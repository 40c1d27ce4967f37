/** `npm run demo` end to end: the five scenes run against a real GiftGenius and find what they narrate. */
import { describe, expect, it } from 'vitest';
import { runDemo } from '../../examples/giftgenius/demo.js';

describe('npm run demo', () => {
  it('plays the scenario and reports each scene as it happened', async () => {
    const lines: string[] = [];
    const scenes = await runDemo({ exit: true, out: (line = '') => lines.push(line) });
    expect(lines.filter((line) => /^\n?\d\. /.test(line))).toHaveLength(5);
    expect(scenes.map((s) => s.scene)).toEqual([
      'normal calls',
      'gift service hangs',
      'deep analysis (job)',
      'webhook storm',
      'lost checkout response',
    ]);
    const [normal, hang, job, storm, lost] = scenes.map((s) => s.result);
    expect(normal).toMatch(/^3 gifts, order ord_\d+$/);
    expect(hang).toMatch(/^breaker open, circuit_open answered in \d+ ms; checkout unaffected$/);
    expect(job).toBe('completed, progress and partial results');
    expect(storm).toBe('140 events, 140 handled, 60 duplicates absorbed');
    expect(lost).toBe('unknown → reconciled, 1 order');
  }, 90_000);
});
