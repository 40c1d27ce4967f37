/**
 * GiftGenius's MCP resources and prompts, served in both MCP eras: a short guide a host can put in the model's
 * context, the caller's own orders by the `operation_id` their checkout answered (a resource template), and a
 * `plan_gift` prompt whose `occasion` completes.
 */
import { z } from 'zod';
import {
  prompt,
  resource,
  resourceTemplate,
  type McpPrompt,
  type McpResource,
  type McpResourceTemplate,
} from '../../src/entries/mcp.js';
import type { OperationLedger } from '../../src/entries/operations.js';

const GUIDE = `# Ordering a gift with GiftGenius

1. \`suggest_gifts\` with the recipient's interests and a budget in USD: gifts, best match first.
2. \`checkout\` to order one; when its answer says the outcome is unknown, it carries an \`operation_id\`:
   check that order's status before trying again, so the customer is not charged twice.
3. \`start_deep_analysis\` runs in the background: poll \`get_job_status\` with its \`job_id\`, or
   \`cancel_job\`.
`;

/** The occasions `plan_gift` completes, in the order offered. */
export const OCCASIONS = [
  'birthday',
  'anniversary',
  'wedding',
  'graduation',
  'housewarming',
  'baby shower',
  'retirement',
  'thank you',
  'holiday',
];

/**
 * The resources GiftGenius serves. `giftgenius://orders/{operationId}` reads an order through the operation
 * ledger (`reconcile`: the stored outcome, or a lookup while it is unknown), which answers `not_found` for an
 * operation of another principal: a stranger's read is "Resource not found", as for an id that never existed.
 */
export function giftGeniusResources(operations: OperationLedger): (McpResource | McpResourceTemplate)[] {
  return [
    resource({
      uri: 'giftgenius://guide/ordering',
      name: 'ordering-guide',
      title: 'How to order a gift',
      description: 'The steps from a suggestion to an order, and what to do when an order times out.',
      mimeType: 'text/markdown',
      read: () => GUIDE,
    }),
    resourceTemplate({
      uriTemplate: 'giftgenius://orders/{operationId}',
      name: 'order',
      title: 'One of your orders',
      description:
        'An order by the operation_id its checkout answered: its outcome and, once placed, the order.',
      mimeType: 'application/json',
      read: async ({ operationId }) => {
        const result = await operations.reconcile(operationId!);
        return JSON.stringify({
          operation_id: result.operation_id,
          outcome: result.outcome,
          order: result.outcome === 'succeeded' ? result.result : null,
        });
      },
    }),
  ];
}

/** The prompts GiftGenius serves. */
export function giftGeniusPrompts(): McpPrompt[] {
  return [
    prompt({
      name: 'plan_gift',
      title: 'Plan a gift',
      description: 'Asks the model to find and order a gift for someone, within a budget.',
      arguments: {
        recipient: z.string().min(1).describe('Who the gift is for, and what they like'),
        occasion: z.string().min(1).describe('The occasion (birthday, anniversary, …)').optional(),
        budget: z
          .string()
          .regex(/^\d+(\.\d{1,2})?$/, 'a budget in USD, like 40 or 39.99')
          .describe('The most to spend, in USD')
          .optional(),
      },
      complete: {
        occasion: (value) => OCCASIONS.filter((occasion) => occasion.startsWith(value.toLowerCase())),
      },
      get: ({ recipient, occasion, budget }) => ({
        description: `A gift for ${recipient}`,
        messages: [
          {
            role: 'user',
            content: {
              type: 'text',
              text: [
                `Find a gift for ${recipient}${occasion === undefined ? '' : ` for their ${occasion}`}.`,
                budget === undefined ? 'Keep it reasonable.' : `Spend at most ${budget} USD.`,
                'Use suggest_gifts with their interests, show me the best three, and order one with checkout only',
                'once I have chosen. If checkout answers that the outcome is unknown, resume it with the same',
                'operation_id; never start a second order.',
              ].join(' '),
            },
          },
        ],
      }),
    }),
  ];
}
