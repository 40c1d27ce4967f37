import { sqliteFacetBackend } from './facets-contract.js';
import { routesContract } from './routes-contract.js';

routesContract('sqlite', sqliteFacetBackend('breakwater-routes'));
