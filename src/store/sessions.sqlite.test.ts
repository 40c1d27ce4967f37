import { sqliteFacetBackend } from './facets-contract.js';
import { sessionsContract } from './sessions-contract.js';

sessionsContract('sqlite', sqliteFacetBackend('breakwater-sessions'));
