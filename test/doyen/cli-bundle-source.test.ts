// The bundled CLI's source is part of every node's heap: V8 keeps a script's source for as long as
// it runs (lazy functions compile from it), and holds it at two bytes a character as soon as one
// character is outside Latin-1. The bundle was 2.2 MB with a few non-ASCII characters in comments,
// 4.4 MB of each node's heap; scripts/bundle-cli.mjs now strips comments and whitespace and escapes
// what is left (1.5 MB, one byte a character).
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/repo-root.js';

const run = promisify(execFile);
const BUNDLE = join(REPO_ROOT, 'packages/doyen/dist/cli-bundle.cjs');
const work = mkdtempSync(join(tmpdir(), 'doyen-cli-bundle-source-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * Heap bytes a compiled (not run) script of `file` keeps: large-object space after a full GC with
 * the script held, minus without it, in a fresh process (the source is far above the large-object
 * threshold, so it lives there alone).
 */
async function heldBySource(file: string): Promise<number> {
  const probe = `
    const { Module } = require('node:module');
    const v8 = require('node:v8');
    const vm = require('node:vm');
    const large = () => { gc(); gc(); return v8.getHeapSpaceStatistics().find((s) => s.space_name === 'large_object_space').space_used_size; };
    const before = large();
    // as the bin does (compile-cache.ts): the shebang commented out, the same length; only the
    // script is left holding the source
    let script = (() => {
      const raw = require('node:fs').readFileSync(${JSON.stringify(file)}, 'utf8');
      return new vm.Script(Module.wrap(raw.startsWith('#!') ? '//' + raw.slice(2) : raw), { filename: 'probe.cjs' });
    })();
    const held = large() - before;
    script = undefined;
    process.stdout.write(String(held));
  `;
  const { stdout } = await run(process.execPath, ['--expose-gc', '-e', probe]);
  return Number(stdout);
}

describe('the bundled CLI source', () => {
  it('is ASCII only: V8 holds it at one byte a character', () => {
    const bytes = readFileSync(BUNDLE);
    const wide = bytes.findIndex((b) => b > 0x7f);
    expect(wide, `a non-ASCII byte at ${wide}: ${bytes.subarray(Math.max(0, wide - 40), wide + 40)}`).toBe(
      -1,
    );
    // comments and whitespace are gone (2.2 MB unminified)
    expect(bytes.length).toBeLessThan(1.8 * 1024 * 1024);
  });

  it('costs the heap about its size; one non-ASCII character doubles it (positive control)', async () => {
    const size = readFileSync(BUNDLE).length;
    const widened = join(work, 'widened.cjs');
    writeFileSync(widened, `${readFileSync(BUNDLE, 'utf8')}\n// \u2192\n`);
    const [ascii, wide] = await Promise.all([heldBySource(BUNDLE), heldBySource(widened)]);
    expect(ascii).toBeLessThan(size * 1.25);
    expect(wide).toBeGreaterThan(size * 1.9);
  });
});
