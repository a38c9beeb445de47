/**
 * OpenTelemetry, when the app has it: `@opentelemetry/api` is an optional peer dependency,
 * looked up once when this module loads. Without it (or without a registered SDK) every helper
 * here is a no-op costing one check. The trace context travels in the envelope as a W3C
 * `traceparent` string, validated on arrival like every other field.
 */
import { createRequire } from 'node:module';

type OtelApi = typeof import('@opentelemetry/api');

/**
 * Looked up synchronously (no top-level await, so a bundler can inline this module). The API keeps
 * its registered SDK on a global, so this copy sees the one the app registered through ESM.
 */
function loadOtelApi(): OtelApi | undefined {
  try {
    return createRequire(import.meta.url)('@opentelemetry/api') as OtelApi;
  } catch {
    return undefined;
  }
}

const api = loadOtelApi();

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
  const otel = api;
  const span = otel.trace
    .getTracer('doyen')
    .startSpan(name, { kind: KINDS[kind](otel), attributes }, context);
  const result = otel.context.with(otel.trace.setSpan(context, span), fn);
  return {
    result,
    span: {
      end(error) {
        if (error) {
          span.recordException(error);
          span.setStatus({ code: otel.SpanStatusCode.ERROR, message: error.message });
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

/** Whether `@opentelemetry/api` was found (tracing still needs the app to register an SDK). */
export function tracingAvailable(): boolean {
  return api !== undefined;
}
