/**
 * A minimal OpenTelemetry SDK for tests, written against `@opentelemetry/api` alone (no SDK dependency):
 * a tracer provider that records every ended span in memory, an `AsyncLocalStorage` context manager and a
 * W3C `traceparent` propagator. Enough to assert span trees, parents, attributes, events, statuses and the
 * headers a request carried; not a sampler, exporter or limits implementation.
 */
import { randomBytes } from 'node:crypto';
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type AttributeValue,
  type Context,
  type ContextManager,
  type Link,
  type Span,
  type SpanContext,
  type SpanOptions,
  type SpanStatus,
  type TextMapGetter,
  type TextMapPropagator,
  type TextMapSetter,
  type TimeInput,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';

/** An ended span as the tests read it. */
export interface RecordedSpan {
  name: string;
  kind: SpanKind;
  traceId: string;
  spanId: string;
  /** The parent's span id, or undefined for a root span. */
  parentSpanId: string | undefined;
  attributes: Attributes;
  events: { name: string; attributes: Attributes }[];
  status: SpanStatus;
  /** The instrumentation scope that made it. */
  scope: { name: string; version: string | undefined };
}

class TestSpan implements Span {
  private readonly attributes: Attributes = {};
  private readonly events: { name: string; attributes: Attributes }[] = [];
  private status: SpanStatus = { code: SpanStatusCode.UNSET };
  private ended = false;

  constructor(
    private name: string,
    private readonly kind: SpanKind,
    private readonly context: SpanContext,
    private readonly parentSpanId: string | undefined,
    private readonly scope: RecordedSpan['scope'],
    private readonly sink: RecordedSpan[],
    attributes: Attributes | undefined,
  ) {
    if (attributes !== undefined) this.setAttributes(attributes);
  }

  spanContext(): SpanContext {
    return this.context;
  }

  setAttribute(key: string, value: AttributeValue): this {
    if (!this.ended) this.attributes[key] = value;
    return this;
  }

  setAttributes(attributes: Attributes): this {
    for (const [key, value] of Object.entries(attributes)) {
      if (value !== undefined) this.setAttribute(key, value);
    }
    return this;
  }

  addEvent(name: string, attributes?: Attributes | TimeInput): this {
    if (!this.ended) {
      const attrs =
        typeof attributes === 'object' && !(attributes instanceof Date) && !Array.isArray(attributes);
      this.events.push({ name, attributes: attrs ? { ...(attributes as Attributes) } : {} });
    }
    return this;
  }

  addLink(_link: Link): this {
    return this;
  }

  addLinks(_links: Link[]): this {
    return this;
  }

  setStatus(status: SpanStatus): this {
    if (!this.ended) this.status = { ...status };
    return this;
  }

  updateName(name: string): this {
    if (!this.ended) this.name = name;
    return this;
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.sink.push({
      name: this.name,
      kind: this.kind,
      traceId: this.context.traceId,
      spanId: this.context.spanId,
      parentSpanId: this.parentSpanId,
      attributes: { ...this.attributes },
      events: this.events.map((e) => ({ name: e.name, attributes: { ...e.attributes } })),
      status: { ...this.status },
      scope: this.scope,
    });
  }

  isRecording(): boolean {
    return !this.ended;
  }

  recordException(): void {
    this.addEvent('exception');
  }
}

class TestTracer implements Tracer {
  constructor(
    private readonly scope: RecordedSpan['scope'],
    private readonly sink: RecordedSpan[],
  ) {}

  startSpan(name: string, options: SpanOptions = {}, ctx: Context = context.active()): Span {
    const parent = options.root === true ? undefined : trace.getSpanContext(ctx);
    const valid = parent !== undefined && isSpanContextValid(parent);
    const spanContext: SpanContext = {
      traceId: valid ? parent.traceId : randomBytes(16).toString('hex'),
      spanId: randomBytes(8).toString('hex'),
      traceFlags: TraceFlags.SAMPLED,
    };
    return new TestSpan(
      name,
      options.kind ?? SpanKind.INTERNAL,
      spanContext,
      valid ? parent.spanId : undefined,
      this.scope,
      this.sink,
      options.attributes,
    );
  }

  startActiveSpan<F extends (span: Span) => unknown>(name: string, ...rest: unknown[]): ReturnType<F> {
    const fn = rest[rest.length - 1] as F;
    const options = (rest.length >= 2 ? rest[0] : undefined) as SpanOptions | undefined;
    const parent = (rest.length >= 3 ? rest[1] : undefined) as Context | undefined;
    const ctx = parent ?? context.active();
    const span = this.startSpan(name, options, ctx);
    return context.with(trace.setSpan(ctx, span), () => fn(span)) as ReturnType<F>;
  }
}

class TestTracerProvider implements TracerProvider {
  constructor(private readonly sink: RecordedSpan[]) {}

  getTracer(name: string, version?: string): Tracer {
    return new TestTracer({ name, version }, this.sink);
  }
}

/** The `AsyncLocalStorage` context manager of the SDK's `context-async-hooks`, in a dozen lines. */
class AlsContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();

  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.storage.run(ctx, () => fn.call(thisArg, ...args));
  }

  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const fn = target as unknown as (...args: unknown[]) => unknown;
    return ((...args: unknown[]) => this.with(ctx, () => fn(...args))) as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.storage.disable();
    return this;
  }
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** W3C Trace Context (`traceparent` only), as the SDK's `W3CTraceContextPropagator` writes it. */
class TraceparentPropagator implements TextMapPropagator {
  inject(ctx: Context, carrier: unknown, setter: TextMapSetter): void {
    const span = trace.getSpanContext(ctx);
    if (span === undefined || !isSpanContextValid(span)) return;
    const flags = (span.traceFlags & TraceFlags.SAMPLED).toString(16).padStart(2, '0');
    setter.set(carrier, 'traceparent', `00-${span.traceId}-${span.spanId}-${flags}`);
  }

  extract(ctx: Context, carrier: unknown, getter: TextMapGetter): Context {
    const raw = getter.get(carrier, 'traceparent');
    const value = Array.isArray(raw) ? raw[0] : raw;
    const match = typeof value === 'string' ? TRACEPARENT.exec(value) : null;
    if (match === null) return ctx;
    return trace.setSpanContext(ctx, {
      traceId: match[1]!,
      spanId: match[2]!,
      traceFlags: parseInt(match[3]!, 16),
      isRemote: true,
    });
  }

  fields(): string[] {
    return ['traceparent'];
  }
}

/** What {@link installTracing} gives a test. */
export interface Tracing {
  /** Every span ended since install (or the last `reset`), in end order. */
  readonly spans: RecordedSpan[];
  /** The ended spans named `name`. */
  named(name: string): RecordedSpan[];
  /** The one ended span named `name` (throws when there are none or several). */
  one(name: string): RecordedSpan;
  reset(): void;
  /** Unregisters the provider, the context manager and the propagator. */
  uninstall(): void;
}

/** Registers the test SDK globally, as an application's OpenTelemetry setup would. */
export function installTracing(): Tracing {
  const spans: RecordedSpan[] = [];
  trace.setGlobalTracerProvider(new TestTracerProvider(spans));
  context.setGlobalContextManager(new AlsContextManager());
  propagation.setGlobalPropagator(new TraceparentPropagator());
  return {
    spans,
    named: (name) => spans.filter((s) => s.name === name),
    one(name) {
      const found = spans.filter((s) => s.name === name);
      if (found.length !== 1) {
        throw new Error(
          `expected one span named ${name}, got ${found.length}: ${spans.map((s) => s.name).join(', ')}`,
        );
      }
      return found[0]!;
    },
    reset: () => void spans.splice(0),
    uninstall() {
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/** `traceparent` of a span as the propagator writes it. */
export function traceparentOf(span: Pick<RecordedSpan, 'traceId' | 'spanId'>): string {
  return `00-${span.traceId}-${span.spanId}-01`;
}
