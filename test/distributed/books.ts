/**
 * What the distributed proof reads afterwards (not a test file): the store's own books on PostgreSQL (jobs,
 * their terminal events, the webhook inbox) and the commerce service's payment intents (the payment
 * handler's effect, one per event when nothing ran twice to effect).
 */
import pg from 'pg';

const TERMINAL = ['job.completed', 'job.failed', 'job.canceled'];

/** The store's books of one schema. */
export interface StoreBooks {
  /** Jobs per status. */
  statuses: Record<string, number>;
  /** Jobs per type. */
  types: Record<string, number>;
  /** Jobs whose terminal events are not exactly one, of the type their status says (should be none). */
  badTerminals: Array<{ id: string; status: string; terminals: string[] }>;
  /** Jobs that were started more than once (a run lost with a killed worker, then reclaimed). */
  restarted: number;
  /** The inbox's event ids of the `payments` source, with how many rows each has. */
  inbox: Map<string, number>;
  /** Inbox rows whose job is not `completed`. */
  inboxNotCompleted: number;
}

/** Reads {@link StoreBooks} from `schema` (a name the test made: letters, digits, underscores). */
export async function readStoreBooks(url: string, schema: string): Promise<StoreBooks> {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new RangeError(`unexpected schema ${schema}`);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const count = async (sql: string): Promise<Record<string, number>> => {
      const { rows } = await client.query<{ k: string; n: number }>(sql);
      return Object.fromEntries(rows.map((row) => [row.k, row.n]));
    };
    const statuses = await count(
      `SELECT status AS k, count(*)::int AS n FROM ${schema}.jobs GROUP BY status`,
    );
    const types = await count(`SELECT type AS k, count(*)::int AS n FROM ${schema}.jobs GROUP BY type`);
    const bad = await client.query<{ id: string; status: string; terminals: string[] }>(
      `SELECT j.id, j.status, coalesce(array_agg(e.type ORDER BY e.seq) FILTER (WHERE e.type = ANY($1)), '{}') AS terminals
         FROM ${schema}.jobs j LEFT JOIN ${schema}.job_events e ON e.job_id = j.id
        GROUP BY j.id, j.status
       HAVING count(*) FILTER (WHERE e.type = ANY($1)) <> 1
           OR count(*) FILTER (WHERE e.type = ANY($1) AND e.type <> 'job.' || j.status) > 0`,
      [TERMINAL],
    );
    const restarted = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (
         SELECT job_id FROM ${schema}.job_events WHERE type = 'job.started' GROUP BY job_id HAVING count(*) > 1
       ) r`,
    );
    const inbox = await client.query<{ event_id: string; n: number }>(
      `SELECT event_id, count(*)::int AS n FROM ${schema}.webhook_inbox WHERE source = 'payments' GROUP BY event_id`,
    );
    const notCompleted = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${schema}.webhook_inbox i JOIN ${schema}.jobs j ON j.id = i.job_id
        WHERE j.status <> 'completed'`,
    );
    return {
      statuses,
      types,
      badTerminals: bad.rows,
      restarted: restarted.rows[0]!.n,
      inbox: new Map(inbox.rows.map((row) => [row.event_id, row.n])),
      inboxNotCompleted: notCompleted.rows[0]!.n,
    };
  } finally {
    await client.end();
  }
}

/** Payment intents at the commerce service, counted per idempotency key (the handler sends the event id). */
export async function paymentIntentsByKey(commerceUrl: string): Promise<Map<string, number>> {
  const response = await fetch(`${commerceUrl}/payment_intents`);
  if (!response.ok) throw new Error(`GET /payment_intents answered ${response.status}`);
  const { payment_intents: intents } = (await response.json()) as {
    payment_intents: Array<{ idempotency_key: string }>;
  };
  const byKey = new Map<string, number>();
  for (const intent of intents)
    byKey.set(intent.idempotency_key, (byKey.get(intent.idempotency_key) ?? 0) + 1);
  return byKey;
}

/** Creates `count` orders at the commerce service (payment events must name an existing order). */
export async function createOrders(commerceUrl: string, productId: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const response = await fetch(`${commerceUrl}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': `proof-order-${i}` },
      body: JSON.stringify({ product_id: productId, quantity: 1, customer_id: 'cus_proof' }),
    });
    if (response.status !== 201) throw new Error(`POST /orders answered ${response.status}`);
    ids.push(((await response.json()) as { order_id: string }).order_id);
  }
  return ids;
}

/** Audit records per action (`job.completed`, `webhook.accepted`, …), read page by page. */
export async function auditActions(audit: {
  read(afterSeq?: number, limit?: number): Promise<Array<{ seq: number; body: string }>>;
}): Promise<Record<string, number>> {
  const actions: Record<string, number> = {};
  for (let after = 0; ;) {
    const page = await audit.read(after, 1_000);
    if (page.length === 0) return actions;
    for (const record of page) {
      const { action } = JSON.parse(record.body) as { action: string };
      actions[action] = (actions[action] ?? 0) + 1;
    }
    after = page.at(-1)!.seq;
  }
}
