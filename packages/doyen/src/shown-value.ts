// How a config error shows a value it refuses. A secret put under the wrong key (`secrt`, a
// misspelt nested key, a string where an object was expected) reaches these messages, and they
// go to the terminal, the logs and CI output: so a value is printed only when it cannot be a
// secret. The key path is always named; the value only when it is a number, a boolean, null or
// a string spelling one (`"9000"` for 9000, the usual mistake). Anything else by its kind.

/** A string that reads as a number or a boolean: what a quoted port or flag looks like. */
const NUMBER_OR_BOOLEAN = /^\s*([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|true|false)\s*$/i;

/** `value` as a config error may print it (see above). */
export function shownValue(value: unknown): string {
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'string')
    return NUMBER_OR_BOOLEAN.test(value) ? JSON.stringify(value) : 'a string (not shown: it may be a secret)';
  // a secret may sit inside under any key: never by content
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
