/**
 * Secrets a client puts where Breakwater writes things down are masked: in the server's request log
 * (`--log`, pino through a real stream) every logged URL has its secret query parameters and credential-like
 * values redacted, and logged errors their credentials; in the audit log (on SQLite), API keys, JWTs and
 * bearer tokens in tool arguments are masked in free text and in values, wherever they appear.
 */
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/core/index.js';
import { createJobs } from '../../src/jobs/index.js';
import { createAuditLog, verifyAudit } from '../../src/operations/index.js';
import { closeGracefully, createServer } from '../../src/server/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { tempDb, useCleanups } from '../support/cleanups.js';

const defer = useCleanups();

// Credentials in the formats their issuers use (none of them real).
const OPENAI = 'sk-proj-Xy7Q2mN4pL9sT1vB6wZ3kR8cD5fG0hJ2aE4iU6oP';
const ANTHROPIC = 'sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe-AbCdEf';
const STRIPE = 'sk_live_51HxYzAbCdEfGhIjKlMnOpQrStUv';
const GITHUB = 'ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R';
const GOOGLE = 'AIzaSyD-1a2b3c4d5e6f7g8h9i0jKLMNOPQRSTU';
const AWS = 'AKIAIOSFODNN7EXAMPLE';
const JWT =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c';
const OPAQUE = 'op4que-t0ken-7x9q';

describe("the server's request log", () => {
  async function server(): Promise<{ app: FastifyInstance; output: () => string }> {
    let output = '';
    const store = await openSqliteStore({ path: ':memory:' });
    defer(() => store.close());
    const app = createServer({
      jobs: createJobs({ store }),
      store,
      logger: {
        level: 'info',
        stream: new Writable({
          write(chunk: Buffer, _encoding, done) {
            output += chunk.toString('utf8');
            done();
          },
        }),
      },
      routes: [
        (child) => {
          child.get('/boom', async () => {
            throw new Error(`callback to https://partner.example/cb?api_key=${OPENAI} failed`);
          });
        },
      ],
    });
    defer(() => closeGracefully(app, { graceMs: 0 }));
    return { app, output: () => output };
  }

  it('every logged URL has its secret parameters and credential-like values masked', async () => {
    const { app, output } = await server();
    const urls: Record<string, string> = {
      [`/jobs?api_key=${OPENAI}&limit=5`]: '/jobs?api_key=[redacted]&limit=5',
      [`/jobs?key=${GOOGLE}`]: '/jobs?key=[redacted]',
      '/jobs?code=4%2F0AX4XfWh-oauth-code&state=xyz': '/jobs?code=[redacted]&state=xyz',
      [`/jobs?access_token=${OPAQUE}&token=${OPAQUE}&secret=${OPAQUE}`]:
        '/jobs?access_token=[redacted]&token=[redacted]&secret=[redacted]',
      [`/jobs?password=${OPAQUE}&client_secret=${OPAQUE}&sig=${OPAQUE}&signature=${OPAQUE}`]:
        '/jobs?password=[redacted]&client_secret=[redacted]&sig=[redacted]&signature=[redacted]',
      // A credential under an innocent name is found by its look.
      [`/jobs?q=${JWT}`]: '/jobs?q=[redacted]',
      [`/jobs?q=Bearer%20${OPAQUE}`]: '/jobs?q=Bearer%20[redacted]',
      [`/jobs?q=Bearer+${OPAQUE}`]: '/jobs?q=Bearer+[redacted]',
      [`/jobs?note=${ANTHROPIC}&type=gift`]: '/jobs?note=[redacted]&type=gift',
      [`/keys/${OPENAI}`]: '/keys/[redacted]',
    };
    for (const url of Object.keys(urls)) await app.inject({ method: 'GET', url });
    await app.inject({ method: 'GET', url: '/boom' });
    const lines = output()
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const logged = lines
      .filter((l) => l['msg'] === 'incoming request')
      .map((l) => (l['req'] as { url: string }).url);
    expect(logged).toEqual([...Object.values(urls), '/boom']);
    const failed = lines.find((l) => l['msg'] === 'request failed') as {
      err: { message: string; stack: string };
    };
    expect(failed.err.message).toBe('callback to https://partner.example/cb?api_key=[redacted] failed');
    expect(failed.err.stack).toContain('callback to https://partner.example/cb?api_key=[redacted] failed');
    for (const secret of [OPENAI, ANTHROPIC, GOOGLE, JWT, OPAQUE, '4%2F0AX4XfWh-oauth-code']) {
      expect(output()).not.toContain(secret);
    }
  });
});

describe('the audit log (SQLite)', () => {
  it('masks API keys, JWTs and bearer tokens in tool arguments, in free text and values, and still verifies', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const store = await openSqliteStore({ path: tempDb(defer, 'breakwater-audit'), clock });
    defer(() => store.close());
    const audit = createAuditLog({ store: store.audit, clock });
    await audit.record({
      actor: `mcp:support (${OPENAI})`,
      action: 'tool.call',
      target: `support_ticket?token=${OPAQUE}`,
      data: {
        tool: 'support_ticket',
        arguments: {
          note: `my OpenAI key is ${OPENAI}, please rotate it`,
          provider_key: ANTHROPIC,
          keys: [STRIPE, GITHUB, GOOGLE, AWS],
          header: `Authorization: Bearer ${OPAQUE}`,
          session: JWT,
          callback: `https://partner.example/cb?code=${OPAQUE}&state=ok`,
          nested: { deeper: { text: `id_token=${JWT}` } },
          max_tokens: 300,
          order_id: 'ord_123',
        },
      },
    });
    const [record] = await store.audit.read();
    for (const secret of [OPENAI, ANTHROPIC, STRIPE, GITHUB, GOOGLE, AWS, JWT, OPAQUE]) {
      expect(record!.body).not.toContain(secret);
    }
    const body = JSON.parse(record!.body) as Record<string, unknown>;
    expect(body).toMatchObject({
      actor: 'mcp:support ([redacted])',
      target: 'support_ticket?token=[redacted]',
      data: {
        tool: 'support_ticket',
        arguments: {
          note: 'my OpenAI key is [redacted], please rotate it',
          provider_key: '[redacted]',
          keys: ['[redacted]', '[redacted]', '[redacted]', '[redacted]'],
          header: 'Authorization: Bearer [redacted]',
          session: '[redacted]',
          callback: 'https://partner.example/cb?code=[redacted]&state=ok',
          nested: { deeper: { text: 'id_token=[redacted]' } },
          max_tokens: 300,
          order_id: 'ord_123',
        },
      },
    });
    expect(await verifyAudit(store.audit)).toMatchObject({ ok: true, records: 1 });
  });
});
