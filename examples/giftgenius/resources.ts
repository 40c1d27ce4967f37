/**
 * GiftGenius's MCP resources: a short guide a host can put in the model's context, served by
 * `resources/read` in both MCP eras.
 */
import { resource, type McpResource } from '../../src/entries/mcp.js';

const GUIDE = `# Ordering a gift with GiftGenius

1. \`suggest_gifts\` with the recipient's interests and a budget in USD: gifts, best match first.
2. \`checkout\` to order one; when its answer says the outcome is unknown, it carries an \`operation_id\`:
   check that order's status before trying again, so the customer is not charged twice.
3. \`start_deep_analysis\` runs in the background: poll \`get_job_status\` with its \`job_id\`, or
   \`cancel_job\`.
`;

/** The resources GiftGenius serves. */
export function giftGeniusResources(): McpResource[] {
  return [
    resource({
      uri: 'giftgenius://guide/ordering',
      name: 'ordering-guide',
      title: 'How to order a gift',
      description: 'The steps from a suggestion to an order, and what to do when an order times out.',
      mimeType: 'text/markdown',
      read: () => GUIDE,
    }),
  ];
}
