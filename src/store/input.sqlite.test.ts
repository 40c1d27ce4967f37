import { sqliteFacetBackend } from './facets-contract.js';
import { inputContract } from './input-contract.js';

inputContract('sqlite', sqliteFacetBackend('breakwater-input'));
