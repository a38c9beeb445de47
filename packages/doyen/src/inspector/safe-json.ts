/** Limits for turning arbitrary actor data (contexts, events) into small JSON. */
export interface PlainLimits {
  /** Nesting levels kept; deeper values become `"[…]"`. */
  readonly maxDepth: number;
  /** Keys kept per object and items per array, Map or Set. */
  readonly maxItems: number;
  /** Characters kept per string. */
  readonly maxString: number;
  /** Values visited in total: bounds the work on huge contexts. */
  readonly maxNodes: number;
}

export const defaultPlainLimits: PlainLimits = { maxDepth: 6, maxItems: 50, maxString: 200, maxNodes: 2000 };

/**
 * A JSON-safe copy of `value`: never throws, never loops. Cycles become `"[Circular]"`,
 * functions `"[Function name]"`, bigints strings, Maps objects and Sets arrays; `toJSON` is
 * honoured (actor refs print as their address); size is bounded by `limits`.
 */
export function toPlain(value: unknown, limits: Partial<PlainLimits> = {}): unknown {
  const l = { ...defaultPlainLimits, ...limits };
  const seen = new WeakSet<object>();
  let nodes = 0;
  const walk = (v: unknown, depth: number): unknown => {
    if (++nodes > l.maxNodes) return '[…]';
    switch (typeof v) {
      case 'string':
        return v.length > l.maxString ? `${v.slice(0, l.maxString)}…` : v;
      case 'number':
        return Number.isFinite(v) ? v : String(v);
      case 'boolean':
        return v;
      case 'bigint':
        return `${v}n`;
      case 'undefined':
        return undefined;
      case 'symbol':
        return v.toString();
      case 'function':
        return `[Function ${v.name || 'anonymous'}]`;
    }
    if (v === null) return null;
    const o = v as object;
    if (seen.has(o)) return '[Circular]';
    if (depth >= l.maxDepth) return '[…]';
    seen.add(o);
    try {
      if (typeof (o as { toJSON?: unknown }).toJSON === 'function' && !(o instanceof Map)) {
        let j: unknown;
        try {
          j = (o as { toJSON: () => unknown }).toJSON();
        } catch {
          return '[Unserializable]';
        }
        return j === o ? '[…]' : walk(j, depth);
      }
      if (o instanceof Error) return { error: o.name, message: walk(o.message, depth + 1) };
      if (ArrayBuffer.isView(o)) return `[${o.constructor.name} ${o.byteLength} bytes]`;
      if (Array.isArray(o) || o instanceof Set) {
        const items = Array.isArray(o) ? o : [...o];
        const out = items.slice(0, l.maxItems).map((x) => {
          const y = walk(x, depth + 1);
          return y === undefined ? null : y;
        });
        if (items.length > l.maxItems) out.push(`… ${items.length - l.maxItems} more`);
        return out;
      }
      const entries: [string, unknown][] =
        o instanceof Map ? [...o].map(([k, x]) => [String(k), x]) : Object.entries(o);
      const out: Record<string, unknown> = {};
      let n = 0;
      for (const [k, x] of entries) {
        if (n++ >= l.maxItems) {
          out['…'] = `${entries.length - l.maxItems} more keys`;
          break;
        }
        const y = walk(x, depth + 1);
        if (y !== undefined) out[k] = y;
      }
      return out;
    } catch {
      return '[Unserializable]';
    } finally {
      seen.delete(o);
    }
  };
  return walk(value, 0);
}

/** JSON of `value` for display, at most `maxChars` long (cut with `…`); never throws. */
export function summarize(value: unknown, maxChars = 2048, limits: Partial<PlainLimits> = {}): string {
  let text: string;
  try {
    text = JSON.stringify(toPlain(value, limits)) ?? 'undefined';
  } catch {
    text = '"[Unserializable]"';
  }
  return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}
