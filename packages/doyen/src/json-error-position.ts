// Where JSON text stops being JSON. Node 20's JSON.parse says "Unexpected token 'x', "…" is not
// valid JSON": no position, and a quote of the text around it (which may hold a secret). A config
// error names the line and column instead, found by this scanner of RFC 8259's grammar. It runs
// only once JSON.parse has refused the text, and loops rather than recurses: no nesting depth
// can overflow the stack.

const WHITESPACE = new Set([' ', '\t', '\n', '\r']);
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't']);
const HEX = /^[0-9a-fA-F]{4}$/;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?/y;

/** The offset of the first character that makes `text` invalid JSON (its length when it ends too early); -1 when valid. */
export function jsonErrorOffset(text: string): number {
  let i = 0;
  const skipWhitespace = () => {
    while (i < text.length && WHITESPACE.has(text[i]!)) i++;
  };
  /** A string at i; false with i at the fault. */
  const string = (): boolean => {
    if (text[i] !== '"') return false;
    i++;
    while (i < text.length) {
      const c = text[i]!;
      if (c === '"') {
        i++;
        return true;
      }
      if (c < ' ') return false;
      if (c === '\\') {
        const e = text[i + 1];
        if (e === 'u') {
          if (!HEX.test(text.slice(i + 2, i + 6))) {
            i += 2;
            return false;
          }
          i += 6;
        } else if (e !== undefined && ESCAPES.has(e)) i += 2;
        else {
          i++;
          return false;
        }
      } else i++;
    }
    return false;
  };
  /** A number, literal or string at i (not a container); false with i at the fault. */
  const scalar = (): boolean => {
    const c = text[i];
    if (c === '"') return string();
    for (const literal of ['true', 'false', 'null'])
      if (c === literal[0]) {
        for (const ch of literal) {
          if (text[i] !== ch) return false;
          i++;
        }
        return true;
      }
    NUMBER.lastIndex = i;
    const number = NUMBER.exec(text);
    if (!number) {
      if (c === '-') i++;
      return false;
    }
    i += number[0].length;
    return true;
  };
  /** `"key" :` inside an object; false with i at the fault. */
  const key = (): boolean => {
    skipWhitespace();
    if (!string()) return false;
    skipWhitespace();
    if (text[i] !== ':') return false;
    i++;
    return true;
  };
  const open: ('{' | '[')[] = [];
  for (;;) {
    // a value
    skipWhitespace();
    const c = text[i];
    let closed = false;
    if (c === '{' || c === '[') {
      i++;
      skipWhitespace();
      if (text[i] === (c === '{' ? '}' : ']')) {
        i++;
        closed = true;
      } else {
        open.push(c);
        if (c === '{' && !key()) return i;
        continue;
      }
    }
    if (!closed && !scalar()) return i;
    // after a value: a separator, the end of its container, or the end of the text
    for (;;) {
      skipWhitespace();
      const container = open.at(-1);
      if (container === undefined) return i === text.length ? -1 : i;
      const end = container === '{' ? '}' : ']';
      if (text[i] === end) {
        open.pop();
        i++;
        continue;
      }
      if (text[i] !== ',') return i;
      i++;
      if (container === '{' && !key()) return i;
      break;
    }
  }
}

/** 1-based line and column of `offset` in `text`. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset).split('\n');
  return { line: before.length, column: before.at(-1)!.length + 1 };
}
