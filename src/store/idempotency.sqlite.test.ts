import { sqliteFacetBackend } from './facets-contract.js';
import { idempotencyContract } from './idempotency-contract.js';

idempotencyContract('sqlite', sqliteFacetBackend('breakwater-idempotency'));
