import { describe } from 'vitest';
import { openStore } from '../../store/index.js';
import { idempotencyRouteSuite } from './test-support.js';

describe('the Idempotency-Key route option on SQLite', () => {
  idempotencyRouteSuite((clock) => openStore({ url: ':memory:', clock }));
});
