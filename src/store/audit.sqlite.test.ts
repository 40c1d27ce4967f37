import { auditContract } from './audit-contract.js';
import { sqliteFacetBackend } from './facets-contract.js';

auditContract('sqlite', sqliteFacetBackend('breakwater-audit'));
