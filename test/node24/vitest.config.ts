/**
 * The vitest configuration of `npm run test:node24` (`test/node24/run.ts`): the project's, with
 * `better-sqlite3` resolved to the copy built for Node 24 (`$BREAKWATER_NODE24_SQLITE`, set by run.ts).
 */
import { defineConfig, mergeConfig } from 'vitest/config';
import base from '../../vitest.config.js';

const addon = process.env.BREAKWATER_NODE24_SQLITE;
if (addon === undefined || addon === '')
  throw new Error('run through `npm run test:node24`, which builds better-sqlite3 for Node 24');

export default mergeConfig(base, defineConfig({ resolve: { alias: { 'better-sqlite3': addon } } }));
