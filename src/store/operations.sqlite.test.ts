import { sqliteFacetBackend } from './facets-contract.js';
import { operationsContract } from './operations-contract.js';

operationsContract('sqlite', sqliteFacetBackend('breakwater-operations'));
