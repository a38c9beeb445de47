import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The README's newcomer path ("### Ship an app"), block by block, for the tests that run it:
 * packing, installing, the app, running it, starting a node from code, the image and manifests.
 * A block added, removed or of another language fails here, so a test never checks a stale one.
 */
const README = fileURLToPath(new URL('../../README.md', import.meta.url));
const SECTION = '### Ship an app';
const BLOCKS = [
  ['pack', 'sh'],
  ['install', 'sh'],
  ['app', 'js'],
  ['run', 'sh'],
  ['main', 'ts'],
  ['deploy', 'sh'],
] as const;

export type NewcomerBlocks = Record<(typeof BLOCKS)[number][0], string>;

export function newcomerBlocks(readme: string = readFileSync(README, 'utf8')): NewcomerBlocks {
  const start = readme.indexOf(`\n${SECTION}\n`);
  if (start < 0) throw new Error(`README: no "${SECTION}" section`);
  const rest = readme.slice(start + SECTION.length + 2);
  const end = rest.search(/^#{2,3} /m);
  const section = end < 0 ? rest : rest.slice(0, end);
  const found = [...section.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({
    lang: m[1]!,
    text: m[2]!,
  }));
  if (found.length !== BLOCKS.length || found.some((b, i) => b.lang !== BLOCKS[i]![1]))
    throw new Error(
      `README "${SECTION}": expected blocks ${BLOCKS.map((b) => b[1]).join(', ')}, found ${found.map((b) => b.lang).join(', ')}`,
    );
  return Object.fromEntries(BLOCKS.map(([name], i) => [name, found[i]!.text])) as NewcomerBlocks;
}

/** The lines of a shell block as commands: `\` continuations joined, blank lines dropped. */
export function shellCommands(block: string): string[] {
  return block
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
}

/**
 * Words of one command line, as sh would split them for the constructs the README uses:
 * single and double quotes, `$(openssl rand -hex N)` (a fresh random value); any other `$`
 * expansion is refused rather than passed on literally.
 */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let pos = 0;
  const expand = (text: string) =>
    text.replace(/\$\(openssl rand -hex (\d+)\)|\$\S*/g, (m, n) => {
      if (n === undefined) throw new Error(`README command: expansion ${m} not supported`);
      return randomBytes(Number(n)).toString('hex');
    });
  while (pos < line.length) {
    if (line[pos] === ' ') {
      if (word) words.push(word);
      word = '';
      pos++;
      continue;
    }
    const m = /"((?:[^"\\]|\\.)*)"|'([^']*)'|([^\s"']+)/y;
    m.lastIndex = pos;
    const hit = m.exec(line);
    if (!hit) throw new Error(`README command: cannot split ${line}`);
    word += hit[2] !== undefined ? hit[2] : expand(hit[1] ?? hit[3]!);
    pos = m.lastIndex;
  }
  if (word) words.push(word);
  return words;
}

/** `A=1 B=2 prog args…`: the leading assignments and the rest. */
export function splitAssignments(words: readonly string[]): { env: Record<string, string>; rest: string[] } {
  const env: Record<string, string> = {};
  let i = 0;
  for (; i < words.length; i++) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/s.exec(words[i]!);
    if (!m) break;
    env[m[1]!] = m[2]!;
  }
  return { env, rest: words.slice(i) };
}
