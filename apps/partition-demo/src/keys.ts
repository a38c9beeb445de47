/**
 * Keys of the interactive view: `1`–`9` (or the arrows) select a node, then `k` kill -9,
 * `r` restart, `p` pause/resume, `x` remove (graceful); `a` add, `s` split in two halves,
 * `h` heal, `q` (or Ctrl-C) quit. The stdin of a terminal in raw mode: one key at a time, and
 * Ctrl-C arrives as a key rather than as SIGINT.
 */

export type KeyAction =
  | { readonly type: 'select'; readonly index: number }
  | { readonly type: 'move'; readonly by: 1 | -1 }
  | { readonly type: 'kill' | 'restart' | 'pause' | 'remove' | 'add' | 'split' | 'heal' | 'quit' | 'redraw' };

export const KEY_HELP = '[1-9] select [k]ill [r]estart [p]ause [x] remove [a]dd [s]plit [h]eal [q]uit';

/** The keys that are one action each, as a table (several keys may name the same action). */
const KEY_ACTIONS: Readonly<Record<string, KeyAction>> = {
  k: { type: 'kill' },
  r: { type: 'restart' },
  p: { type: 'pause' },
  x: { type: 'remove' },
  a: { type: 'add' },
  s: { type: 'split' },
  h: { type: 'heal' },
  q: { type: 'quit' },
  '\u0003': { type: 'quit' }, // Ctrl-C
  '\u0004': { type: 'quit' }, // Ctrl-D
  '\u000c': { type: 'redraw' }, // Ctrl-L
  '\u001b[A': { type: 'move', by: -1 },
  '\u001bOA': { type: 'move', by: -1 },
  '\u001b[B': { type: 'move', by: 1 },
  '\u001bOB': { type: 'move', by: 1 },
};

/** Maps one key (as raw-mode stdin delivers it) to an action. */
export function keyAction(key: string): KeyAction | undefined {
  if (/^[1-9]$/.test(key)) return { type: 'select', index: Number(key) - 1 };
  return Object.hasOwn(KEY_ACTIONS, key) ? KEY_ACTIONS[key] : undefined;
}

/** Splits a chunk into keys: escape sequences stay whole, other characters one by one. */
export function splitKeys(chunk: string): string[] {
  const keys: string[] = [];
  for (let i = 0; i < chunk.length; ) {
    const seq = chunk[i] === '\u001b' ? /^(?:\[[0-9;]*[A-Za-z~]|O[A-Za-z])/.exec(chunk.slice(i + 1)) : null;
    const key = seq ? `\u001b${seq[0]}` : chunk[i]!;
    keys.push(key);
    i += key.length;
  }
  return keys;
}

/**
 * Puts a TTY stdin in raw mode and calls `onAction` per key; returns the function that restores
 * the terminal (also safe to call twice).
 */
export function listenKeys(stdin: NodeJS.ReadStream, onAction: (action: KeyAction) => void): () => void {
  const raw = stdin.isTTY === true;
  if (raw) stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  const onData = (chunk: string) => {
    for (const key of splitKeys(chunk)) {
      const action = keyAction(key.length === 1 ? key.toLowerCase() : key);
      if (action) onAction(action);
    }
  };
  stdin.on('data', onData);
  stdin.resume();
  let restored = false;
  return () => {
    if (restored) return;
    restored = true;
    stdin.off('data', onData);
    if (raw) stdin.setRawMode(false);
    stdin.pause();
  };
}
