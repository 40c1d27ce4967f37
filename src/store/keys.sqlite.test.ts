import { sqliteFacetBackend } from './facets-contract.js';
import { keysContract } from './keys-contract.js';

keysContract('sqlite', sqliteFacetBackend('breakwater-keys'));
