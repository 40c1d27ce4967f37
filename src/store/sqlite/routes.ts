import { isRouteName, isRouteVersion, prepareRoute, type PreparedRoute } from '../checks.js';
import type { RouteHead, RouteStore, RouteVersion } from '../routes.js';
import type { SqliteContext } from './context.js';
import type { SqliteRunner } from './runner.js';

/** The `route_versions` columns under {@link RouteVersion}'s names; `definition` is still text. */
const VERSION_COLUMNS = 'name, version, definition, note, created_at AS createdAt';

/** The `route_heads` columns under {@link RouteHead}'s names. */
const HEAD_COLUMNS = 'name, deployed, latest, deployed_at AS deployedAt, revision';

type VersionRow = Omit<RouteVersion, 'definition'> & { definition: string };

function toVersion(row: VersionRow): RouteVersion {
  return { ...row, definition: JSON.parse(row.definition) };
}

/**
 * Prepares `RouteStore.create`, in one `BEGIN IMMEDIATE` transaction: an UPSERT of the head takes the next
 * number (1 for a new name, else `latest + 1`) and bumps the route's revision, then the version is inserted
 * and the global revision bumped. The write lock is held throughout, so creates of one name from every
 * connection and process number their versions 1, 2, 3, … with no gap and no duplicate.
 */
export function prepareCreate(ctx: SqliteContext): (route: PreparedRoute) => RouteVersion {
  const head = ctx.db.prepare<[string], number>(
    `INSERT INTO route_heads (name, deployed, latest, deployed_at, revision) VALUES (?, NULL, 1, NULL, 1)
     ON CONFLICT (name) DO UPDATE SET latest = latest + 1, revision = revision + 1
     RETURNING latest`,
  );
  const takeNumber = head.pluck();
  const insert = ctx.db.prepare<[string, number, string, string | null, number]>(
    'INSERT INTO route_versions (name, version, definition, note, created_at) VALUES (?, ?, ?, ?, ?)',
  );
  const bump = prepareBumpRevision(ctx);
  return ctx.db.transaction((route: PreparedRoute): RouteVersion => {
    const now = ctx.clock.now();
    const version = takeNumber.get(route.name)!;
    insert.run(route.name, version, route.definition, route.note, now);
    bump();
    return {
      name: route.name,
      version,
      definition: JSON.parse(route.definition),
      note: route.note,
      createdAt: now,
    };
  }).immediate;
}

/**
 * Prepares `deploy`, in one `BEGIN IMMEDIATE` transaction: an UPDATE of the head that matches only when the
 * version exists and is not the deployed one already; it bumps the route's revision and the global one. An
 * unknown version changes nothing (undefined); deploying the deployed version again changes nothing either
 * and resolves the head as it is (its `deployedAt` stays when `deployed` last changed).
 */
export function prepareDeploy(ctx: SqliteContext): (name: string, version: number) => RouteHead | undefined {
  const update = ctx.db.prepare<[{ name: string; version: number; now: number }], RouteHead>(
    `UPDATE route_heads SET deployed = @version, deployed_at = @now, revision = revision + 1
      WHERE name = @name AND deployed IS NOT @version
        AND EXISTS (SELECT 1 FROM route_versions WHERE name = @name AND version = @version)
     RETURNING ${HEAD_COLUMNS}`,
  );
  const select = ctx.db.prepare<[string], RouteHead>(
    `SELECT ${HEAD_COLUMNS} FROM route_heads WHERE name = ?`,
  );
  const bump = prepareBumpRevision(ctx);
  return ctx.db.transaction((name: string, version: number): RouteHead | undefined => {
    const changed = update.get({ name, version, now: ctx.clock.now() });
    if (changed !== undefined) {
      bump();
      return changed;
    }
    const current = select.get(name);
    return current?.deployed === version ? current : undefined;
  }).immediate;
}

/** The global revision's bump, run inside create's and deploy's transactions. */
function prepareBumpRevision(ctx: SqliteContext): () => void {
  const bump = ctx.db.prepare('UPDATE route_revision SET revision = revision + 1 WHERE id = 1');
  return () => {
    bump.run();
  };
}

/**
 * `store.routes` on SQLite. Not group-committed: routes change by hand (an operator's create, deploy or
 * rollback), so each write runs alone after the queued group-commit work; reads are single statements.
 */
export class SqliteRouteStore implements RouteStore {
  private readonly createTx: (route: PreparedRoute) => RouteVersion;
  private readonly deployTx: (name: string, version: number) => RouteHead | undefined;
  private readonly deployedStmt: (name: string) => VersionRow | undefined;
  private readonly getStmt: (name: string, version: number) => VersionRow | undefined;
  private readonly versionsStmt: (name: string) => VersionRow[];
  private readonly headsStmt: () => RouteHead[];
  private readonly revisionStmt: () => number;

  constructor(private readonly runner: SqliteRunner) {
    const { ctx } = runner;
    const db = ctx.db;
    this.createTx = prepareCreate(ctx);
    this.deployTx = prepareDeploy(ctx);
    const deployed = db.prepare<[{ name: string }], VersionRow>(
      `SELECT ${VERSION_COLUMNS} FROM route_versions
        WHERE name = @name AND version = (SELECT deployed FROM route_heads WHERE name = @name)`,
    );
    const get = db.prepare<[string, number], VersionRow>(
      `SELECT ${VERSION_COLUMNS} FROM route_versions WHERE name = ? AND version = ?`,
    );
    const versions = db.prepare<[string], VersionRow>(
      `SELECT ${VERSION_COLUMNS} FROM route_versions WHERE name = ? ORDER BY version DESC`,
    );
    const heads = db.prepare<[], RouteHead>(`SELECT ${HEAD_COLUMNS} FROM route_heads ORDER BY name`);
    const revision = db.prepare<[], number>('SELECT revision FROM route_revision WHERE id = 1').pluck();
    this.deployedStmt = (name) => deployed.get({ name });
    this.getStmt = (name, version) => get.get(name, version);
    this.versionsStmt = (name) => versions.all(name);
    this.headsStmt = () => heads.all();
    this.revisionStmt = () => revision.get()!;
  }

  create(name: string, definition: unknown, note?: string): Promise<RouteVersion> {
    return this.runner.write(() => this.createTx(prepareRoute(name, definition, note)));
  }

  deploy(name: string, version: number): Promise<RouteHead | undefined> {
    if (!isRouteName(name) || !isRouteVersion(version)) return this.runner.write(() => undefined);
    return this.runner.write(this.deployTx, name, version);
  }

  deployed(name: string): Promise<RouteVersion | undefined> {
    return this.runner.read(() => {
      const row = isRouteName(name) ? this.deployedStmt(name) : undefined;
      return row === undefined ? undefined : toVersion(row);
    });
  }

  get(name: string, version: number): Promise<RouteVersion | undefined> {
    return this.runner.read(() => {
      const row = isRouteName(name) && isRouteVersion(version) ? this.getStmt(name, version) : undefined;
      return row === undefined ? undefined : toVersion(row);
    });
  }

  versions(name: string): Promise<RouteVersion[]> {
    return this.runner.read(() => (isRouteName(name) ? this.versionsStmt(name).map(toVersion) : []));
  }

  heads(): Promise<RouteHead[]> {
    return this.runner.read(this.headsStmt);
  }

  revision(): Promise<number> {
    return this.runner.read(this.revisionStmt);
  }
}
