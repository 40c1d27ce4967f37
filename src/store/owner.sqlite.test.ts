import { sqliteFacetBackend } from './facets-contract.js';
import { ownerContract } from './owner-contract.js';

ownerContract('sqlite', sqliteFacetBackend('breakwater-owner'));
