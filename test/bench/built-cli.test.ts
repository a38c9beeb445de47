import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleStaleness } from '../../bench/lib/built-cli.js';

/**
 * The chaos runner's nodes run the built bundle; a bundle older than a package's sources would
 * test old code, so the runner refuses it (bench/lib/built-cli.ts). A tree of its own, with
 * mtimes set by hand.
 */
const root = mkdtempSync(join(tmpdir(), 'doyen-built-cli-test-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const T = 1_700_000_000; // seconds
function file(path: string, seconds: number): string {
  const full = join(root, path);
  mkdirSync(join(full, '..'), { recursive: true });
  writeFileSync(full, '');
  utimesSync(full, seconds, seconds);
  return full;
}

describe('bundleStaleness', () => {
  const packages = join(root, 'packages');
  file('packages/core/src/a.ts', T);
  file('packages/sharding/src/region/b.ts', T + 10);
  file('packages/sharding/README.md', T + 100); // not a source: ignored
  file('packages/sharding/src/notes.md', T + 100); // not TypeScript: ignored

  it('names a missing bundle', () => {
    expect(bundleStaleness({ bundle: join(root, 'dist/none.cjs'), packages })).toMatch(
      /none\.cjs is missing: run `pnpm build` first/,
    );
  });

  it('accepts a bundle newer than every source file', () => {
    const bundle = file('dist/fresh.cjs', T + 20);
    expect(bundleStaleness({ bundle, packages })).toBeUndefined();
  });

  it('names the newest source file a bundle did not see, however deep', () => {
    const bundle = file('dist/stale.cjs', T + 5);
    const why = bundleStaleness({ bundle, packages });
    expect(why).toContain(join('packages', 'sharding', 'src', 'region', 'b.ts'));
    expect(why).toMatch(/changed after the last build .*stale\.cjs.*: run `pnpm build` first/);
  });
});
