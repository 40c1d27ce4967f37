import { describe, expect, it } from 'vitest';
import { useFacetHarness, type FacetBackend } from './facets-contract.js';
import { MAX_ROUTE_NAME_LENGTH, type RouteVersion } from './routes.js';

/**
 * The route store contract suite: every rule in the docstrings of `store/routes.ts`, run against each backend
 * (both backends pass the same contract tests: docs/architecture.md#contract-suites).
 */

/** A route definition as `ai/` might store it: nested, non-ASCII, key order that must be kept. */
const DEFINITION = {
  when: { metadata: { tier: 'gold' } },
  split: [
    { percent: 90, model: 'gpt-4o-mini', timeoutMs: 4000 },
    { percent: 10, model: 'claude-3-5-haiku', retries: 2 },
  ],
  note: 'caf\u00e9 \ud83d\ude00',
  a: 1,
};

export function routesContract(name: string, backend: FacetBackend): void {
  describe(`RouteStore contract: ${name}`, () => {
    const h = useFacetHarness(backend);

    it('create stores version 1 of a new name as a draft: nothing deployed', async () => {
      const created = await h.store.routes.create('support', DEFINITION);
      expect(created).toEqual({
        name: 'support',
        version: 1,
        definition: DEFINITION,
        note: null,
        createdAt: h.start,
      });
      expect(Object.keys(created.definition as object)).toEqual(['when', 'split', 'note', 'a']);
      const stored = await h.store.routes.get('support', 1);
      expect(stored).toEqual(created);
      expect(Object.keys(stored!.definition as object)).toEqual(['when', 'split', 'note', 'a']);
      expect(await h.store.routes.deployed('support')).toBeUndefined();
      expect(await h.store.routes.heads()).toEqual([
        { name: 'support', deployed: null, latest: 1, deployedAt: null, revision: 1 },
      ]);
    });

    it('create numbers versions 1, 2, 3 per name, keeps notes, and versions lists newest first', async () => {
      const v1 = await h.store.routes.create('support', { v: 1 });
      h.clock.tick(10);
      const v2 = await h.store.routes.create('support', [1, 'two'], 'cheaper fallback for the demo');
      h.clock.tick(10);
      const v3 = await h.store.routes.create('support', 'three', '');
      const other = await h.store.routes.create('sales', null);
      expect([v1.version, v2.version, v3.version, other.version]).toEqual([1, 2, 3, 1]);
      expect(v2).toEqual({
        name: 'support',
        version: 2,
        definition: [1, 'two'],
        note: 'cheaper fallback for the demo',
        createdAt: h.start + 10,
      });
      expect(v3).toMatchObject({ definition: 'three', note: '', createdAt: h.start + 20 });
      expect(other).toMatchObject({ definition: null, note: null });
      expect(await h.store.routes.versions('support')).toEqual([v3, v2, v1]);
      expect(await h.store.routes.versions('sales')).toEqual([other]);
      expect(await h.store.routes.versions('unknown')).toEqual([]);
      expect(await h.store.routes.get('support', 4)).toBeUndefined();
      expect(await h.store.routes.get('unknown', 1)).toBeUndefined();
    });

    it('20 concurrent creates of one name get versions 1..20, no duplicate, no gap', async () => {
      const created = await Promise.all(
        Array.from({ length: 20 }, (_, i) => h.store.routes.create('race', { i })),
      );
      expect(created.map((v) => v.version).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 20 }, (_, i) => i + 1),
      );
      const versions = await h.store.routes.versions('race');
      expect(versions.map((v) => v.version)).toEqual(Array.from({ length: 20 }, (_, i) => 20 - i));
      // Each create's answer is what was stored under its number.
      for (const version of created)
        expect(await h.store.routes.get('race', version.version)).toEqual(version);
      expect((await h.store.routes.heads())[0]).toMatchObject({ latest: 20, revision: 20 });
      expect(await h.store.routes.revision()).toBe(20);
    });

    it('20 concurrent creates of one name from two stores on the same storage get versions 1..20', async () => {
      const other = await h.another();
      const created = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? h.store : other).routes.create('race', { i })),
      );
      expect(created.map((v) => v.version).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 20 }, (_, i) => i + 1),
      );
      expect(await h.store.routes.revision()).toBe(20);
    });

    it('deploy makes a version live; a rollback to 1 makes deployed answer version 1', async () => {
      const v1 = await h.store.routes.create('support', { model: 'a' });
      const v2 = await h.store.routes.create('support', { model: 'b' });
      h.clock.tick(1000);
      expect(await h.store.routes.deploy('support', 2)).toEqual({
        name: 'support',
        deployed: 2,
        latest: 2,
        deployedAt: h.start + 1000,
        revision: 3,
      });
      expect(await h.store.routes.deployed('support')).toEqual(v2);
      // A new draft does not change what is deployed.
      const v3 = await h.store.routes.create('support', { model: 'c' });
      expect(await h.store.routes.deployed('support')).toEqual(v2);
      h.clock.tick(1000);
      expect(await h.store.routes.deploy('support', 1)).toEqual({
        name: 'support',
        deployed: 1,
        latest: 3,
        deployedAt: h.start + 2000,
        revision: 5,
      });
      expect(await h.store.routes.deployed('support')).toEqual(v1);
      expect(await h.store.routes.versions('support')).toEqual([v3, v2, v1]);
      // A second store sees the switch.
      const other = await h.another();
      expect(await other.routes.deployed('support')).toEqual(v1);
    });

    it('deploy of an unknown version or name changes nothing and resolves undefined', async () => {
      await h.store.routes.create('support', { model: 'a' });
      await h.store.routes.deploy('support', 1);
      const heads = await h.store.routes.heads();
      const revision = await h.store.routes.revision();
      h.clock.tick(50);
      for (const [route, version] of [
        ['support', 2],
        ['support', 0],
        ['support', -1],
        ['support', 1.5],
        ['support', Number.NaN],
        ['unknown', 1],
        ['', 1],
        ['bad name', 1],
      ] as const) {
        expect(await h.store.routes.deploy(route, version)).toBeUndefined();
      }
      expect(await h.store.routes.heads()).toEqual(heads);
      expect(await h.store.routes.revision()).toBe(revision);
      expect(await h.store.routes.heads()).toHaveLength(1);
    });

    it('deploying the deployed version again changes nothing and resolves the head as it is', async () => {
      await h.store.routes.create('support', { model: 'a' });
      const head = await h.store.routes.deploy('support', 1);
      const revision = await h.store.routes.revision();
      h.clock.tick(50);
      expect(await h.store.routes.deploy('support', 1)).toEqual(head);
      expect(await h.store.routes.heads()).toEqual([head]);
      expect(await h.store.routes.revision()).toBe(revision);
    });

    it('heads lists every route by name with its deployed and latest versions', async () => {
      await h.store.routes.create('support', 1);
      await h.store.routes.create('Sales', 1);
      await h.store.routes.create('sales.eu-1', 1);
      await h.store.routes.create('sales.eu-1', 2);
      h.clock.tick(7);
      await h.store.routes.deploy('sales.eu-1', 1);
      expect(await h.store.routes.heads()).toEqual([
        { name: 'Sales', deployed: null, latest: 1, deployedAt: null, revision: 1 },
        { name: 'sales.eu-1', deployed: 1, latest: 2, deployedAt: h.start + 7, revision: 3 },
        { name: 'support', deployed: null, latest: 1, deployedAt: null, revision: 1 },
      ]);
    });

    it('revision changes on every create and deploy, not on reads, and is seen from a second store', async () => {
      const other = await h.another();
      const start = await h.store.routes.revision();
      expect(start).toBe(0);
      await h.store.routes.create('support', 1);
      const afterCreate = await h.store.routes.revision();
      expect(afterCreate).toBe(start + 1);
      expect(await other.routes.revision()).toBe(afterCreate);
      await h.store.routes.deployed('support');
      await h.store.routes.get('support', 1);
      await h.store.routes.versions('support');
      await h.store.routes.heads();
      await h.store.routes.deploy('support', 9);
      expect(await h.store.routes.revision()).toBe(afterCreate);
      await other.routes.deploy('support', 1);
      const afterDeploy = await h.store.routes.revision();
      expect(afterDeploy).toBe(afterCreate + 1);
      await other.routes.create('sales', 1);
      expect(await h.store.routes.revision()).toBe(afterDeploy + 1);
      expect(await other.routes.revision()).toBe(afterDeploy + 1);
    });

    it('create refuses a bad name (RangeError), a bad note (RangeError), a definition with no JSON form (TypeError)', async () => {
      const longest = 'r'.repeat(MAX_ROUTE_NAME_LENGTH);
      expect((await h.store.routes.create(longest, 1)).name).toBe(longest);
      expect((await h.store.routes.create('A-z_0.9', 1, 'n'.repeat(1000))).note).toHaveLength(1000);
      const revision = await h.store.routes.revision();
      for (const bad of ['', `${longest}r`, 'a b', 'a/b', 'caf\u00e9', 'a\0b', 7 as unknown as string]) {
        await expect(h.store.routes.create(bad, 1)).rejects.toBeInstanceOf(RangeError);
      }
      for (const note of ['n'.repeat(1001), 'a\0b', 5 as unknown as string]) {
        await expect(h.store.routes.create('support', 1, note)).rejects.toBeInstanceOf(RangeError);
      }
      const cycle: Record<string, unknown> = {};
      cycle.self = cycle;
      for (const definition of [undefined, () => 1, Symbol('s'), 10n, cycle]) {
        await expect(h.store.routes.create('support', definition)).rejects.toBeInstanceOf(TypeError);
      }
      expect(await h.store.routes.revision()).toBe(revision);
      expect((await h.store.routes.heads()).map((head) => head.name)).toEqual(['A-z_0.9', longest]);
      expect(await h.store.routes.versions('support')).toEqual([]);
    });

    it('reads of a malformed name or version find nothing', async () => {
      await h.store.routes.create('support', 1);
      expect(await h.store.routes.get('support', 0)).toBeUndefined();
      expect(await h.store.routes.get('support', 1.5)).toBeUndefined();
      expect(await h.store.routes.get('a\0b', 1)).toBeUndefined();
      expect(await h.store.routes.deployed('a\0b')).toBeUndefined();
      expect(await h.store.routes.versions('')).toEqual([]);
      expect(await h.store.routes.versions('x'.repeat(MAX_ROUTE_NAME_LENGTH + 1))).toEqual([]);
    });

    it('every method rejects after close', async () => {
      const v1: RouteVersion = await h.store.routes.create('support', 1);
      await h.store.close();
      await expect(h.store.routes.create('support', 2)).rejects.toThrow(/closed/);
      await expect(h.store.routes.deploy('support', v1.version)).rejects.toThrow(/closed/);
      await expect(h.store.routes.deployed('support')).rejects.toThrow(/closed/);
      await expect(h.store.routes.get('support', 1)).rejects.toThrow(/closed/);
      await expect(h.store.routes.versions('support')).rejects.toThrow(/closed/);
      await expect(h.store.routes.heads()).rejects.toThrow(/closed/);
      await expect(h.store.routes.revision()).rejects.toThrow(/closed/);
    });
  });
}
