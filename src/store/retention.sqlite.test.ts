import { sqliteFacetBackend } from './facets-contract.js';
import { retentionContract } from './retention-contract.js';

retentionContract('sqlite', sqliteFacetBackend('breakwater-retention'));
