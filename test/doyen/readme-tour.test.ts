import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { freePorts } from '../support/cluster-nodes.js';

/**
 * The README's tour examples marked `<!-- tour:run -->` run as they are written: each block is
 * written to a temporary module whose `doyen` and `xstate` imports point at the workspace, with
 * the example's ports (25520-25529) swapped for free ones, and imported. A README example that
 * no longer matches the API fails here.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const DOYEN = pathToFileURL(join(ROOT, 'packages/doyen/src/index.ts')).href;
const XSTATE = pathToFileURL(createRequire(join(ROOT, 'package.json')).resolve('xstate')).href;
const dir = mkdtempSync(join(tmpdir(), 'doyen-readme-tour-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The ```ts blocks of the tour section, with whether each is marked to run. */
function tourBlocks(readme: string): { code: string; runs: boolean }[] {
  const start = readme.indexOf('\n## A short tour');
  const end = readme.indexOf('\n## ', start + 1);
  const tour = readme.slice(start, end);
  return [...tour.matchAll(/(<!-- tour:run -->\n)?```ts\n([\s\S]*?)```/g)].map((m) => ({
    code: m[2]!,
    runs: m[1] !== undefined,
  }));
}

let seq = 0;
/** Runs one block as a module; resolves with what it printed with console.log. */
async function runBlock(code: string): Promise<string[]> {
  const ports = await freePorts(10);
  const source = code
    .replaceAll(/from 'doyen'/g, `from '${DOYEN}'`)
    .replaceAll(/from 'xstate'/g, `from '${XSTATE}'`)
    .replaceAll(/\b2552(\d)\b/g, (_, i: string) => String(ports[Number(i)]));
  const file = join(dir, `block-${++seq}.ts`);
  writeFileSync(file, source);
  const printed: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
    printed.push(args.join(' '));
  });
  try {
    await import(pathToFileURL(file).href);
  } finally {
    log.mockRestore();
  }
  return printed;
}

describe('the README tour', () => {
  const blocks = tourBlocks(README);
  const runnable = blocks.filter((b) => b.runs);

  it('has its examples, and the one telling an actor on another member is marked to run', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(8);
    expect(runnable.some((b) => b.code.includes('receptionist') && b.code.includes('refFor'))).toBe(true);
  });

  it('runs every marked example against the workspace sources', { timeout: 60_000 }, async () => {
    for (const block of runnable) {
      const printed = await runBlock(block.code);
      if (block.code.includes('Greeters'))
        expect(printed).toEqual(['hello, tour', 'hello, tour', 'hello, b']);
    }
  });

  it('positive control: a marked example that uses an API that is not there fails the run', async () => {
    const block = runnable.find((b) => b.code.includes('receptionist'))!;
    // in setup: startNode fails and closes what it bound, so the control leaves nothing running
    const broken = block.code.replace('node.receptionist.register(', 'node.receptionist.add(');
    expect(broken).not.toBe(block.code);
    await expect(runBlock(broken)).rejects.toThrow(/add is not a function/);
  });
});
