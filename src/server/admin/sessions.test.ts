import { adminSessionsContract, sqliteSessionBackend } from './sessions-contract.js';

adminSessionsContract('sqlite', sqliteSessionBackend());
