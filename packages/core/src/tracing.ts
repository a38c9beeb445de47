/**
 * OpenTelemetry, when the app has it: `@opentelemetry/api` is an optional peer dependency. Until
 * something is registered with the API (an SDK's tracer provider, a context manager) there is
 * nothing to trace or propagate, so every helper here is a no-op costing one check, and the API
 * is not even loaded (that alone was ~45 ms of a node's start-up). The trace context travels in
 * the envelope as a W3C `traceparent` string, validated on arrival like every other field.
 */
import { createRequire } from 'node:module';

type OtelApi = typeof import('@opentelemetry/api');

/** Where every copy of the API (major version 1) keeps what was registered with it. */
const OTEL_GLOBAL = Symbol.for('opentelemetry.js.api.1');

let api: OtelApi | undefined;
let looked = false;

/** The API, once anything was registered with it; looked up synchronously (a bundler keeps the lookup for run time). */
function otel(): OtelApi | undefined {
  if (looked) return api;
  if ((globalThis as Record<symbol, unknown>)[OTEL_GLOBAL] === undefined) return undefined;
  looked = true;
  try {
    api = createRequire(import.meta.url)('@opentelemetry/api') as OtelApi;
  } catch {
    api = undefined;
  }
  return api;
}

/** `00-<trace id>-<span id>-<flags>`: W3C Trace Context, version 00 (lower-case hex). */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** Whether a string from the network is a usable traceparent (all-zero ids are invalid). */
export function isTraceparent(value: unknown): value is string {
  if (typeof value !== 'string' || value.length !== 55) return false;
  const m = TRACEPARENT.exec(value);
  return m !== null && !/^0+$/.test(m[1]!) && !/^0+$/.test(m[2]!);
}

/** The traceparent of the span active now, if there is one to propagate. */
export function activeTraceparent(): string | undefined {
  const api = otel();
  if (!api) return undefined;
  const span = api.trace.getSpan(api.context.active());
  const ctx = span?.spanContext();
  if (!ctx || !api.trace.isSpanContextValid(ctx)) return undefined;
  return `00-${ctx.traceId}-${ctx.spanId}-${(ctx.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** A span doyen started: end it with the outcome. */
export interface DoyenSpan {
  end(error?: Error): void;
}

const NO_SPAN: DoyenSpan = { end() {} };

export type SpanKind = 'client' | 'server' | 'producer' | 'consumer';

/**
 * Runs `fn` inside a new span `name` (a child of the active span, or of `parent` — a
 * traceparent from the network), so sends made inside carry its context. Returns what `fn`
 * returns and the span, which the caller ends (an ask ends its span on the reply).
 */
export function inSpan<T>(
  name: string,
  kind: SpanKind,
  attributes: Readonly<Record<string, string>>,
  fn: () => T,
  parent?: string,
): { result: T; span: DoyenSpan } {
  const api = otel();
  if (!api) return { result: fn(), span: NO_SPAN };
  let context = api.context.active();
  if (parent) {
    const m = TRACEPARENT.exec(parent)!;
    context = api.trace.setSpanContext(context, {
      traceId: m[1]!,
      spanId: m[2]!,
      traceFlags: Number.parseInt(m[3]!, 16),
      isRemote: true,
    });
  }
  const span = api.trace.getTracer('doyen').startSpan(name, { kind: KINDS[kind](api), attributes }, context);
  const result = api.context.with(api.trace.setSpan(context, span), fn);
  return {
    result,
    span: {
      end(error) {
        if (error) {
          span.recordException(error);
          span.setStatus({ code: api.SpanStatusCode.ERROR, message: error.message });
        }
        span.end();
      },
    },
  };
}

const KINDS: Readonly<Record<SpanKind, (otel: OtelApi) => number>> = {
  client: (otel) => otel.SpanKind.CLIENT,
  server: (otel) => otel.SpanKind.SERVER,
  producer: (otel) => otel.SpanKind.PRODUCER,
  consumer: (otel) => otel.SpanKind.CONSUMER,
};

/** Whether tracing is on: something was registered with `@opentelemetry/api`, and doyen found the API. */
export function tracingAvailable(): boolean {
  return otel() !== undefined;
}
