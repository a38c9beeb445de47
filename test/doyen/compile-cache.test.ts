import { execFile } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { CompileCacheReport } from '../../packages/doyen/src/compile-cache.js';
import { type CliNode, killAll, runCli, secretEnv } from '../support/cli-process.js';
import { freePorts } from '../support/cluster-nodes.js';
import { eventually } from '../support/wait.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'doyen-compile-cache-test-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface FixtureRun {
  readonly filename: string;
  readonly dirname: string;
  readonly strict: boolean;
  readonly required: string;
  readonly tag: string;
}

let fixtures = 0;
/** A CommonJS file shaped like the bundle (shebang, "use strict", require, __filename) that prints what it saw. */
function fixture(tag = 'a'): string {
  const dir = join(work, `fixture-${++fixtures}`);
  mkdirSync(dir);
  const file = join(dir, 'bundle.cjs');
  writeFileSync(
    file,
    `#!/usr/bin/env node
'use strict';
const strict = (function () { return this === undefined; })();
console.log(JSON.stringify({
  filename: __filename, dirname: __dirname, strict, required: require('node:path').basename(__filename),
  tag: ${JSON.stringify(tag)},
}));
`,
  );
  return file;
}

const COMPILE_CACHE = join(ROOT, 'packages/doyen/dist/compile-cache.js');

/**
 * runWithCodeCache in a process of its own, as the bin does: V8 also caches compilations within
 * one process, which would answer for the code cache. Saves at once; the process lives on 200 ms.
 */
async function runInChild(
  bundle: string,
  cache: string,
): Promise<{ report: CompileCacheReport; ran: FixtureRun }> {
  const script = `import { runWithCodeCache } from ${JSON.stringify(pathToFileURL(COMPILE_CACHE).href)};
const report = runWithCodeCache(process.argv[1], { saveAfterMs: 0 });
console.log(JSON.stringify(report));
setTimeout(() => {}, 200);`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script, bundle], {
    env: { ...process.env, DOYEN_COMPILE_CACHE: cache },
  });
  const [ran, report] = stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  return { report, ran };
}

/** A cache directory of this test's own. */
function cacheDir(name: string): string {
  return join(work, `cache-${name}`);
}

describe('the bin runs the bundle through V8 code cache (compile-cache.ts)', () => {
  it('compiles and writes the cache on the first run, reads it back on the next; the bundle runs as CommonJS both times', async () => {
    const bundle = fixture();
    const dir = cacheDir('hit');
    const first = await runInChild(bundle, dir);
    expect(first.report).toEqual({ status: 'miss', directory: dir });
    const [file, ...others] = readdirSync(dir);
    expect(others).toEqual([]);
    expect(file).toMatch(/^cli-[0-9a-f]{32}\.v8$/);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, file!)).mode & 0o777).toBe(0o600);
    const second = await runInChild(bundle, dir);
    expect(second.report).toEqual({ status: 'hit', directory: dir });
    for (const { ran } of [first, second])
      expect(ran).toEqual({
        filename: bundle,
        dirname: join(bundle, '..'),
        strict: true,
        required: 'bundle.cjs',
        tag: 'a',
      });
  });

  it('another bundle of the same length never reads this one’s cache (V8 checks only the length)', async () => {
    const dir = cacheDir('same-length');
    const a = fixture('a');
    const b = fixture('b');
    expect(readFileSync(a).length).toBe(readFileSync(b).length);
    await runInChild(a, dir);
    const other = await runInChild(b, dir);
    expect(other.report.status).toBe('miss');
    expect(other.ran.tag).toBe('b');
    expect(readdirSync(dir)).toHaveLength(2);
    expect((await runInChild(a, dir)).ran.tag).toBe('a');
  });

  it('a cache V8 refuses (garbage) is compiled over and rewritten', async () => {
    const bundle = fixture();
    const dir = cacheDir('rejected');
    await runInChild(bundle, dir);
    const file = join(dir, readdirSync(dir)[0]!);
    const garbage = Buffer.alloc(4096, 7);
    writeFileSync(file, garbage);
    const refused = await runInChild(bundle, dir);
    expect(refused.report.status).toBe('rejected');
    expect(refused.ran.filename).toBe(bundle);
    expect(readFileSync(file).equals(garbage)).toBe(false);
    expect((await runInChild(bundle, dir)).report.status).toBe('hit');
  });

  it('a directory others can write, or a link, is not used; "off" turns the cache off', async () => {
    const bundle = fixture();
    const open = cacheDir('open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    const target = cacheDir('link-target');
    mkdirSync(target, { mode: 0o700 });
    const link = cacheDir('link');
    symlinkSync(target, link);
    for (const dir of [open, link]) {
      const { report, ran } = await runInChild(bundle, dir);
      expect(report).toEqual({ status: 'unusable-directory', directory: dir });
      expect(ran.tag).toBe('a');
    }
    const off = await runInChild(bundle, 'off');
    expect(off.report).toEqual({ status: 'off' });
    expect(off.ran.tag).toBe('a');
    expect(readdirSync(open)).toEqual([]);
    expect(readdirSync(target)).toEqual([]);
  });
});

describe('the doyen bin', () => {
  const started: CliNode[] = [];
  afterAll(() => killAll(started.splice(0)));

  it('a node writes the cache once it is up; the next node starts from it', async () => {
    const dir = cacheDir('cli');
    const start = async () => {
      const [port, httpPort] = await freePorts(2);
      const node = runCli(
        ['node', '--cluster', 'cache', '--host', '127.0.0.1', '--port', String(port)].concat([
          '--seeds',
          `127.0.0.1:${port}`,
          '--http-port',
          String(httpPort),
        ]),
        httpPort,
        { ...secretEnv(), DOYEN_COMPILE_CACHE: dir },
      );
      started.push(node);
      expect(await node.waitForEvent('node.started', 30_000)).toBeDefined();
      return node;
    };
    const first = await start();
    expect(first.events().find((e) => e.event === 'node.compile-cache')).toMatchObject({
      status: 'miss',
      directory: dir,
    });
    // written two seconds after the start, the start-up path's code compiled by then
    await eventually(() => readdirSync(dir).some((f) => f.endsWith('.v8')), {
      timeoutMs: 10_000,
      what: 'the cache file',
    });
    const second = await start();
    expect(second.events().find((e) => e.event === 'node.compile-cache')).toMatchObject({
      status: 'hit',
      directory: dir,
    });
  }, 60_000);
});
