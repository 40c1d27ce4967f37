/// <reference lib="dom" />
/**
 * The GiftGenius analysis widget, in the browser (bundled by `build.ts` into one HTML page). It follows one
 * deep analysis job: its steps, the three draft gifts of its partial result, the final list, and a Cancel
 * button. It runs in both hosts:
 * - an MCP Apps host (`ui/*` over `postMessage`): the ext-apps `App` bridge; the host pushes the tool's
 *   input and result, and the widget calls tools through the host (`tools/call`);
 * - ChatGPT (Apps SDK): `window.openai` (`toolOutput`, `callTool`, `widgetState`, `openai:set_globals`).
 *
 * The job id is kept in the widget's state (and in ChatGPT's `widgetState`, which outlives a reload). A push
 * (a tool result the host delivers) updates the view at once; when none came for {@link POLL_MS}, the widget
 * polls `get_job_status` through the host, until the job is finished (or an answer says asking again cannot
 * help, such as a job that is not the user's). Every value from the server is put
 * on the page as text, never as HTML.
 */
import { App } from '@modelcontextprotocol/ext-apps';

type Json = Record<string, unknown>;

/** A gift as the analysis returns it. */
interface Gift {
  id: string;
  name: string;
  price_usd: number;
  reason?: string;
}

/** How the widget reaches its host, whichever it is. */
interface Host {
  /** Calls a tool of the server; resolves with its `structuredContent` (and whether it is an error). */
  callTool(name: string, args: Json): Promise<{ value: Json | undefined; isError: boolean }>;
  /** Keeps the job id where the host keeps widget state (nothing for MCP Apps: the page's memory). */
  saveJobId(jobId: string): void;
}

/** Ms without a push after which the widget asks `get_job_status`; the page's `data-poll-ms` overrides it. */
const POLL_MS = Number(document.body.dataset['pollMs'] ?? 1000);

const FINISHED = new Set(['completed', 'failed', 'canceled']);

const state = {
  jobId: null as string | null,
  status: 'waiting' as string,
  steps: new Map<number, string>(),
  step: 0,
  total: 0,
  drafts: null as Gift[] | null,
  gifts: null as Gift[] | null,
  summary: null as string | null,
  error: null as string | null,
  canceling: false,
  /** Set by an error that asking again cannot fix (`retryable: false`, e.g. no such job): polling stops. */
  stopped: false,
};

let host: Host | undefined;
let timer: ReturnType<typeof setTimeout> | undefined;

function byId(id: string): HTMLElement {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`widget: #${id} is missing`);
  return element;
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function gifts(value: unknown): Gift[] | null {
  return Array.isArray(value) ? (value.filter(isObject) as unknown as Gift[]) : null;
}

/** Takes in one answer: a job handle, a `get_job_status` view, a finished result, or an error result. */
function apply(value: Json | undefined, isError: boolean): void {
  if (value === undefined) return;
  const error = isObject(value['error']) ? value['error'] : undefined;
  if (typeof value['job_id'] === 'string' && value['job_id'] !== state.jobId) {
    state.jobId = value['job_id'];
    host?.saveJobId(state.jobId);
  }
  if (typeof value['status'] === 'string') state.status = value['status'];
  const progress = value['progress'];
  if (isObject(progress) && typeof progress['step'] === 'number') {
    state.step = progress['step'];
    state.total = typeof progress['total'] === 'number' ? progress['total'] : state.total;
    if (typeof progress['message'] === 'string') state.steps.set(progress['step'], progress['message']);
  }
  const partials = value['partial_results'];
  if (Array.isArray(partials)) {
    const latest = [...partials].reverse().find((p) => isObject(p) && Array.isArray(p['drafts']));
    if (isObject(latest)) state.drafts = gifts(latest['drafts']);
  }
  const result = isObject(value['result']) ? value['result'] : 'gifts' in value ? value : undefined;
  if (result !== undefined && gifts(result['gifts']) !== null) {
    state.gifts = gifts(result['gifts']);
    state.summary = typeof result['summary'] === 'string' ? result['summary'] : null;
    state.status = 'completed';
  }
  if (isError || error !== undefined) {
    const message = typeof error?.['message'] === 'string' ? error['message'] : 'The analysis failed.';
    state.error = state.status === 'canceled' ? null : message;
    if (isError && error?.['retryable'] === false) state.stopped = true;
  } else if (!FINISHED.has(state.status)) state.error = null;
  render();
}

/** A push from the host: shown at once, and the next poll waits a full period again. */
function push(value: Json | undefined, isError = false): void {
  apply(value, isError);
  schedule();
}

function schedule(): void {
  if (timer !== undefined) clearTimeout(timer);
  timer = undefined;
  if (state.jobId === null || FINISHED.has(state.status) || state.stopped) return;
  timer = setTimeout(() => void poll(), POLL_MS);
}

async function poll(): Promise<void> {
  timer = undefined;
  if (host === undefined || state.jobId === null) return;
  try {
    const answer = await host.callTool('get_job_status', { job_id: state.jobId });
    apply(answer.value, answer.isError);
  } catch (error) {
    state.error = `Could not reach the job: ${error instanceof Error ? error.message : String(error)}`;
    render();
  }
  schedule();
}

async function cancel(): Promise<void> {
  if (host === undefined || state.jobId === null || state.canceling) return;
  state.canceling = true;
  render();
  try {
    const answer = await host.callTool('cancel_job', { job_id: state.jobId });
    apply(answer.value, answer.isError);
  } catch (error) {
    state.error = `Could not cancel: ${error instanceof Error ? error.message : String(error)}`;
  }
  state.canceling = false;
  render();
  schedule();
}

function giftItems(list: Gift[], className: string): HTMLLIElement[] {
  return list.map((gift) => {
    const item = document.createElement('li');
    item.className = className;
    item.dataset['id'] = String(gift.id);
    const name = document.createElement('strong');
    name.textContent = String(gift.name);
    const price = document.createElement('span');
    price.className = 'price';
    price.textContent = `$${Number(gift.price_usd).toFixed(2)}`;
    item.append(name, ' ', price);
    if (typeof gift.reason === 'string') {
      const reason = document.createElement('small');
      reason.textContent = gift.reason;
      item.append(reason);
    }
    return item;
  });
}

function render(): void {
  byId('job').textContent = state.jobId === null ? 'No job yet' : `Job ${state.jobId}`;
  const status = byId('status');
  status.textContent = state.status.replace('_', ' ');
  status.dataset['status'] = state.status;
  byId('steps').replaceChildren(
    ...[...state.steps.entries()]
      .sort(([a], [b]) => a - b)
      .map(([step, message]) => {
        const item = document.createElement('li');
        item.className = 'step';
        item.dataset['step'] = String(step);
        item.textContent = `${step}/${state.total} ${message}`;
        return item;
      }),
  );
  byId('drafts-section').hidden = state.drafts === null || state.gifts !== null;
  byId('drafts').replaceChildren(...giftItems(state.drafts ?? [], 'draft'));
  byId('gifts-section').hidden = state.gifts === null;
  byId('gifts').replaceChildren(...giftItems(state.gifts ?? [], 'gift'));
  byId('summary').textContent = state.summary ?? '';
  const error = byId('error');
  error.hidden = state.error === null;
  error.textContent = state.error ?? '';
  const button = byId('cancel') as HTMLButtonElement;
  button.disabled = state.jobId === null || FINISHED.has(state.status) || state.canceling || state.stopped;
}

/** The Apps SDK's `window.openai`, as far as the widget uses it. */
interface OpenAiGlobals {
  toolInput?: Json;
  toolOutput?: Json | null;
  widgetState?: Json | null;
  setWidgetState?(state: Json): Promise<void> | void;
  callTool(name: string, args: Json): Promise<Json | undefined>;
}

function chatGptHost(openai: OpenAiGlobals): Host {
  window.addEventListener('openai:set_globals', (event) => {
    const output = (event as CustomEvent<{ globals?: Partial<OpenAiGlobals> }>).detail?.globals?.toolOutput;
    if (isObject(output)) push(output);
  });
  return {
    async callTool(name, args) {
      const answer = await openai.callTool(name, args);
      return {
        value: isObject(answer?.['structuredContent']) ? answer['structuredContent'] : answer,
        isError: answer?.['isError'] === true,
      };
    },
    saveJobId: (jobId) => void openai.setWidgetState?.({ ...openai.widgetState, job_id: jobId }),
  };
}

async function mcpAppsHost(): Promise<Host> {
  const app = new App({ name: 'GiftGenius analysis', version: '1.0.0' }, {});
  app.ontoolinput = ({ arguments: args }) => showRequest(args);
  app.ontoolresult = (result) =>
    push(isObject(result.structuredContent) ? result.structuredContent : undefined, result.isError === true);
  app.ontoolcancelled = () => {
    state.error = 'The host canceled the call; the job may still run.';
    render();
  };
  await app.connect();
  return {
    async callTool(name, args) {
      const result = await app.callServerTool({ name, arguments: args });
      const value = isObject(result.structuredContent) ? result.structuredContent : undefined;
      return { value, isError: result.isError === true };
    },
    saveJobId: () => undefined,
  };
}

function showRequest(args: Json | undefined): void {
  if (args === undefined) return;
  const interests = Array.isArray(args['interests']) ? args['interests'].map(String).join(', ') : '';
  const recipient = typeof args['recipient'] === 'string' ? ` for ${args['recipient']}` : '';
  byId('request').textContent = `Gifts${recipient}: ${interests}`;
}

async function start(): Promise<void> {
  byId('cancel').addEventListener('click', () => void cancel());
  render();
  const openai = (window as unknown as { openai?: OpenAiGlobals }).openai;
  if (openai !== undefined) {
    host = chatGptHost(openai);
    showRequest(openai.toolInput);
    const saved = openai.widgetState?.['job_id'];
    if (typeof saved === 'string') push({ job_id: saved });
    if (isObject(openai.toolOutput)) push(openai.toolOutput);
    return;
  }
  try {
    host = await mcpAppsHost();
  } catch (error) {
    state.error = `No host: ${error instanceof Error ? error.message : String(error)}`;
    render();
  }
  schedule();
}

void start();
