import type pg from 'pg';
import { isRouteName, isRouteVersion, prepareRoute, type PreparedRoute } from '../checks.js';
import type { RouteHead, RouteStore, RouteVersion } from '../routes.js';
import { ms, withTransaction } from './db.js';
import type { PgRunner } from './runner.js';

/** A `route_versions` row (`SELECT *`): BIGINT already a number, json parsed. */
interface VersionRow {
  name: string;
  version: number;
  definition: unknown;
  note: string | null;
  created_at: number;
}

/** A `route_heads` row (`SELECT *`). */
interface HeadRow {
  name: string;
  deployed: number | null;
  latest: number;
  deployed_at: number | null;
  revision: number;
}

function toVersion(row: VersionRow): RouteVersion {
  return {
    name: row.name,
    version: row.version,
    definition: row.definition,
    note: row.note,
    createdAt: row.created_at,
  };
}

function toHead(row: HeadRow): RouteHead {
  return {
    name: row.name,
    deployed: row.deployed,
    latest: row.latest,
    deployedAt: row.deployed_at,
    revision: row.revision,
  };
}

/**
 * `store.routes` on PostgreSQL. Writes are one transaction each and always lock in the same order (the
 * route's head row, then the global revision row), so two writes never deadlock; reads are one statement.
 */
export class PostgresRouteStore implements RouteStore {
  private readonly versionsTable: string;
  private readonly headsTable: string;
  private readonly revisionTable: string;

  constructor(private readonly runner: PgRunner) {
    this.versionsTable = runner.table('route_versions');
    this.headsTable = runner.table('route_heads');
    this.revisionTable = runner.table('route_revision');
  }

  /**
   * One transaction. The head row is inserted when missing (`ON CONFLICT DO NOTHING`: a concurrent first
   * create of the name waits for the other's commit, then finds its row), then locked with
   * `SELECT … FOR UPDATE`, so creates of one name from every pool and process take turns: each numbers its
   * version `latest + 1` from the previous one's commit (1, 2, 3, … with no gap and no duplicate), then the
   * version is inserted and the head's and the global revisions bumped.
   */
  create(name: string, definition: unknown, note?: string): Promise<RouteVersion> {
    return this.runner.run(() => {
      const route = prepareRoute(name, definition, note);
      return withTransaction(this.runner.pool, (client) => this.createIn(client, route));
    });
  }

  /**
   * One transaction: an UPDATE of the head that matches only when the version exists and is not deployed
   * already (it locks the head row, so it serializes with creates and other deploys of the name), then the
   * global revision's bump. An unknown version changes nothing (undefined); deploying the deployed version
   * again changes nothing either and resolves the head as it is.
   */
  deploy(name: string, version: number): Promise<RouteHead | undefined> {
    return this.runner.run(async () => {
      if (!isRouteName(name) || !isRouteVersion(version)) return undefined;
      return withTransaction(this.runner.pool, async (client) => {
        const changed = await client.query<HeadRow>(
          `UPDATE ${this.headsTable} SET deployed = $2, deployed_at = $3, revision = revision + 1
            WHERE name = $1 AND deployed IS DISTINCT FROM $2
              AND EXISTS (SELECT 1 FROM ${this.versionsTable} WHERE name = $1 AND version = $2)
           RETURNING *`,
          [name, version, ms(this.runner.clock.now())],
        );
        const head = changed.rows[0];
        if (head !== undefined) {
          await this.bumpRevision(client);
          return toHead(head);
        }
        const current = await client.query<HeadRow>(`SELECT * FROM ${this.headsTable} WHERE name = $1`, [
          name,
        ]);
        const row = current.rows[0];
        return row?.deployed === version ? toHead(row) : undefined;
      });
    });
  }

  deployed(name: string): Promise<RouteVersion | undefined> {
    return this.runner.run(async () => {
      if (!isRouteName(name)) return undefined;
      const result = await this.runner.pool.query<VersionRow>(
        `SELECT v.* FROM ${this.headsTable} h
           JOIN ${this.versionsTable} v ON v.name = h.name AND v.version = h.deployed
          WHERE h.name = $1`,
        [name],
      );
      const row = result.rows[0];
      return row === undefined ? undefined : toVersion(row);
    });
  }

  get(name: string, version: number): Promise<RouteVersion | undefined> {
    return this.runner.run(async () => {
      if (!isRouteName(name) || !isRouteVersion(version)) return undefined;
      const result = await this.runner.pool.query<VersionRow>(
        `SELECT * FROM ${this.versionsTable} WHERE name = $1 AND version = $2`,
        [name, version],
      );
      const row = result.rows[0];
      return row === undefined ? undefined : toVersion(row);
    });
  }

  versions(name: string): Promise<RouteVersion[]> {
    return this.runner.run(async () => {
      if (!isRouteName(name)) return [];
      const result = await this.runner.pool.query<VersionRow>(
        `SELECT * FROM ${this.versionsTable} WHERE name = $1 ORDER BY version DESC`,
        [name],
      );
      return result.rows.map(toVersion);
    });
  }

  heads(): Promise<RouteHead[]> {
    return this.runner.run(async () => {
      const result = await this.runner.pool.query<HeadRow>(`SELECT * FROM ${this.headsTable} ORDER BY name`);
      return result.rows.map(toHead);
    });
  }

  revision(): Promise<number> {
    return this.runner.run(async () => {
      const result = await this.runner.pool.query<{ revision: number }>(
        `SELECT revision FROM ${this.revisionTable} WHERE id = 1`,
      );
      return result.rows[0]!.revision;
    });
  }

  private async createIn(client: pg.PoolClient, route: PreparedRoute): Promise<RouteVersion> {
    const now = ms(this.runner.clock.now());
    await client.query(
      `INSERT INTO ${this.headsTable} (name, deployed, latest, deployed_at, revision) VALUES ($1, NULL, 0, NULL, 0)
       ON CONFLICT (name) DO NOTHING`,
      [route.name],
    );
    const head = await client.query<{ latest: number }>(
      `SELECT latest FROM ${this.headsTable} WHERE name = $1 FOR UPDATE`,
      [route.name],
    );
    const version = head.rows[0]!.latest + 1;
    const inserted = await client.query<VersionRow>(
      `INSERT INTO ${this.versionsTable} (name, version, definition, note, created_at)
       VALUES ($1, $2, $3::json, $4, $5)
       RETURNING *`,
      [route.name, version, route.definition, route.note, now],
    );
    await client.query(`UPDATE ${this.headsTable} SET latest = $2, revision = revision + 1 WHERE name = $1`, [
      route.name,
      version,
    ]);
    await this.bumpRevision(client);
    return toVersion(inserted.rows[0]!);
  }

  /** Bumps the global revision (its row stays locked until the transaction ends). */
  private async bumpRevision(client: pg.PoolClient): Promise<void> {
    await client.query(`UPDATE ${this.revisionTable} SET revision = revision + 1 WHERE id = 1`);
  }
}
