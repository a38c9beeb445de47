import type { Labels } from './metric-catalogue.js';

/**
 * The identity of a label set. Label names never contain `=` or `,` (Prometheus names are
 * `[a-zA-Z_][a-zA-Z0-9_]*`), values may hold anything: each value is length-prefixed, so two
 * different label sets never share a key (`{a:"x",b:"y"}` is not `{a:"x,b=y"}`).
 */
export function labelKey(labels: Labels): string {
  const keys = Object.keys(labels);
  // no labels or one (the common case on hot paths): nothing to sort
  if (keys.length === 0) return '';
  if (keys.length === 1) return `${keys[0]}=${labels[keys[0]!]}`;
  let key = '';
  for (const k of keys.sort()) {
    const v = String(labels[k]);
    key += `${k}=${v.length}:${v},`;
  }
  return key;
}
