import { execFile } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { Module } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { CompileCacheReport } from '../../packages/doyen/src/compile-cache.js';
import { NodeProcess } from '../../packages/testkit/src/node-process.js';
import { type CliNode, killAll, runCli, secretEnv } from '../support/cli-process.js';
import { freePorts } from '../support/cluster-nodes.js';
import { REPO_ROOT as ROOT } from '../support/repo-root.js';
import { eventually } from '../support/wait.js';

const run = promisify(execFile);
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
 * Returns the line the bundle printed and the report.
 */
async function bundleInChild(
  bundle: string,
  cache: string,
): Promise<{ printed: any; report: CompileCacheReport }> {
  const script = `import { runWithCodeCache } from ${JSON.stringify(pathToFileURL(COMPILE_CACHE).href)};
const report = runWithCodeCache(process.argv[1], { saveAfterMs: 0 });
console.log(JSON.stringify(report));
setTimeout(() => {}, 200);`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script, bundle], {
    env: { ...process.env, DOYEN_COMPILE_CACHE: cache },
  });
  const [printed, report] = stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  return { printed, report };
}

/** The fixture bundle in a child (see bundleInChild): what it ran, and the report. */
async function runInChild(
  bundle: string,
  cache: string,
): Promise<{ report: CompileCacheReport; ran: FixtureRun }> {
  const { printed, report } = await bundleInChild(bundle, cache);
  return { report, ran: printed };
}

/** The newline that ends a cache file's header line (what wrote it, and for which source). */
const HEADER_END = 0x0a;

/** A cache directory of this test's own. */
function cacheDir(name: string): string {
  return join(work, `cache-${name}`);
}

/** A cache directory of its own and two fixtures of the same length (tags a, b): V8 alone tells them apart only by length. */
function sameLengthFixtures(name: string): { dir: string; a: string; b: string } {
  const dir = cacheDir(name);
  const a = fixture('a');
  const b = fixture('b');
  expect(readFileSync(a).length).toBe(readFileSync(b).length);
  return { dir, a, b };
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
    const { dir, a, b } = sameLengthFixtures('same-length');
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
    const good = readFileSync(file);
    // garbage under the right header reaches V8, which refuses it
    const garbage = Buffer.concat([good.subarray(0, good.indexOf(HEADER_END) + 1), Buffer.alloc(4096, 7)]);
    writeFileSync(file, garbage);
    const refused = await runInChild(bundle, dir);
    expect(refused.report).toMatchObject({ status: 'rejected', reason: 'V8 refused it' });
    expect(refused.ran.filename).toBe(bundle);
    expect(readFileSync(file).equals(garbage)).toBe(false);
    expect((await runInChild(bundle, dir)).report.status).toBe('hit');
    // garbage without the header never reaches V8
    writeFileSync(file, Buffer.alloc(4096, 7));
    expect((await runInChild(bundle, dir)).report).toMatchObject({
      status: 'rejected',
      reason: 'made for another source',
    });
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
    for (const [dir, reason] of [
      [open, 'writable by other users'],
      [link, 'not a directory'],
    ] as const) {
      const { report, ran } = await runInChild(bundle, dir);
      expect(report).toMatchObject({ status: 'unusable-directory', directory: dir });
      expect(report.reason).toContain(reason);
      expect(ran.tag).toBe('a');
    }
    const off = await runInChild(bundle, 'off');
    expect(off.report).toEqual({ status: 'off' });
    expect(off.ran.tag).toBe('a');
    expect(readdirSync(open)).toEqual([]);
    expect(readdirSync(target)).toEqual([]);
  });
});

/** Two copies of one bundle that throws and prints where: the same bytes, in two directories. */
function throwingCopies(): [string, string] {
  const source = `'use strict';
function fail() { throw new Error('boom'); }
try { fail(); } catch (error) { console.log(JSON.stringify({ stack: error.stack })); }
`;
  return ['copy-a', 'copy-b'].map((name) => {
    const dir = join(work, `${name}-${++fixtures}`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'bundle.cjs'), source);
    return join(dir, 'bundle.cjs');
  }) as [string, string];
}

/** runWithCodeCache of a throwing copy in a process of its own: the stack it printed, and the report. */
async function stackInChild(
  bundle: string,
  cache: string,
): Promise<{ stack: string; report: CompileCacheReport }> {
  const { printed, report } = await bundleInChild(bundle, cache);
  return { stack: printed.stack, report };
}

describe('a stack trace names the bundle that runs, not the copy that filled the cache', () => {
  it('another checkout of the same bundle has its own entry: its stack traces name its own path', async () => {
    const dir = cacheDir('two-checkouts');
    const [a, b] = throwingCopies();
    expect((await stackInChild(a, dir)).report.status).toBe('miss');
    const again = await stackInChild(a, dir);
    expect(again.report.status).toBe('hit');
    expect(again.stack).toContain(`${a}:2:`);
    const other = await stackInChild(b, dir);
    expect(other.stack).toContain(`${b}:2:`);
    expect(other.stack).not.toContain(a);
    expect(other.report.status).toBe('miss');
    // and it is cached for the next start of that copy, still naming it
    const otherAgain = await stackInChild(b, dir);
    expect(otherAgain.report.status).toBe('hit');
    expect(otherAgain.stack).toContain(`${b}:2:`);
  });

  it('positive control: V8 code cached under one filename and read under another names the first', async () => {
    const [a, b] = throwingCopies();
    const source = Module.wrap(readFileSync(a, 'utf8'));
    const dataFile = join(work, `named-${++fixtures}.v8`);
    const compile = (
      filename: string,
      withData: boolean,
    ) => `const fs = require('node:fs'); const vm = require('node:vm');
const s = new vm.Script(${JSON.stringify(source)}, { filename: ${JSON.stringify(filename)}${withData ? `, cachedData: fs.readFileSync(${JSON.stringify(dataFile)})` : ''} });
if (s.cachedDataRejected) throw new Error('V8 rejected the data');
${withData ? '' : `fs.writeFileSync(${JSON.stringify(dataFile)}, s.createCachedData());`}
s.runInThisContext().call({}, {}, require, { exports: {} }, ${JSON.stringify(filename)}, '.');`;
    await run(process.execPath, ['-e', compile(a, false)]);
    const { stdout } = await run(process.execPath, ['-e', compile(b, true)]);
    const { stack } = JSON.parse(stdout.trim()) as { stack: string };
    // what a cache keyed by content alone would show for the second checkout
    expect(stack).toContain(`${a}:2:`);
    expect(stack).not.toContain(b);
  });
});

/** The only cache file in `dir`. */
function onlyEntry(dir: string): string {
  const files = readdirSync(dir).filter((f) => f.endsWith('.v8'));
  expect(files).toHaveLength(1);
  return join(dir, files[0]!);
}

/** Runs `source` (a fixture's text) in a fresh process with raw V8 `cachedData`, no doyen in between: what V8 alone accepts. */
async function runWithRawV8Cache(source: string, cachedData: Buffer): Promise<string> {
  const sourceFile = join(work, `raw-${++fixtures}.cjs`);
  const dataFile = `${sourceFile}.v8`;
  writeFileSync(sourceFile, source);
  writeFileSync(dataFile, cachedData);
  const script = `const fs = require('node:fs'); const vm = require('node:vm'); const { Module } = require('node:module');
const raw = fs.readFileSync(process.argv[1], 'utf8');
const s = new vm.Script(Module.wrap(raw.startsWith('#!') ? '//' + raw.slice(2) : raw), { filename: process.argv[1], cachedData: fs.readFileSync(process.argv[2]) });
if (s.cachedDataRejected) throw new Error('V8 rejected the data');
s.runInThisContext().call({}, {}, require, { exports: {} }, process.argv[1], '.');`;
  const { stdout } = await run(process.execPath, ['-e', script, sourceFile, dataFile]);
  return (JSON.parse(stdout.trim()) as FixtureRun).tag;
}

describe('the cache runs only code compiled from this very source, from a directory nobody else controls', () => {
  it('a planted entry made from another source of the same length is not used; a legitimate entry is', async () => {
    const { dir, a: mine, b: theirs } = sameLengthFixtures('planted');
    // theirs compiled first; its entry is planted under the name of mine
    await runInChild(theirs, dir);
    const planted = readFileSync(onlyEntry(dir));
    await runInChild(mine, dir);
    const mineFile = readdirSync(dir)
      .map((f) => join(dir, f))
      .find((f) => !readFileSync(f).equals(planted))!;
    // positive control: V8 alone runs the planted code for my source (it checks only the length)
    const raw = planted.subarray(planted.indexOf(HEADER_END) + 1);
    expect(await runWithRawV8Cache(readFileSync(mine, 'utf8'), raw)).toBe('b');
    // positive control: my own entry is used
    const legit = await runInChild(mine, dir);
    expect(legit.report.status).toBe('hit');
    expect(legit.ran.tag).toBe('a');

    copyFileSync(join(dir, readdirSync(dir).find((f) => join(dir, f) !== mineFile)!), mineFile);
    const attacked = await runInChild(mine, dir);
    expect(attacked.report).toMatchObject({ status: 'rejected', reason: 'made for another source' });
    expect(attacked.ran.tag).toBe('a');
    // and it is rewritten with my code
    const again = await runInChild(mine, dir);
    expect(again.report.status).toBe('hit');
    expect(again.ran.tag).toBe('a');
  });

  it('an entry that is a link, or that others may write, is not read', async () => {
    const bundle = fixture('a');
    const dir = cacheDir('entry-checks');
    await runInChild(bundle, dir);
    const file = onlyEntry(dir);
    const good = readFileSync(file);
    // a link to a good entry: refused without following it
    const elsewhere = join(work, 'linked-entry.v8');
    writeFileSync(elsewhere, good, { mode: 0o600 });
    rmSync(file);
    symlinkSync(elsewhere, file);
    const linked = await runInChild(bundle, dir);
    expect(linked.report.status).toBe('rejected');
    expect(linked.report.reason).toMatch(/cannot open it/);
    // a good entry others may write
    rmSync(file, { force: true });
    writeFileSync(file, good);
    chmodSync(file, 0o666);
    const open = await runInChild(bundle, dir);
    expect(open.report).toMatchObject({ status: 'rejected', reason: 'writable by other users' });
    // positive control: the same bytes, ours and closed, are used
    rmSync(file, { force: true });
    writeFileSync(file, good, { mode: 0o600 });
    chmodSync(file, 0o600);
    expect((await runInChild(bundle, dir)).report.status).toBe('hit');
  });

  it('a cache directory under a parent others may write is refused; under a safe or sticky parent it is used', async () => {
    const bundle = fixture('a');
    const openParent = join(work, 'open-parent');
    mkdirSync(openParent);
    chmodSync(openParent, 0o777);
    const underOpen = join(openParent, 'cache');
    const refused = await runInChild(bundle, underOpen);
    expect(refused.report).toMatchObject({ status: 'unusable-directory', directory: underOpen });
    expect(refused.report.reason).toBe(`${openParent} is writable by other users`);
    expect(refused.ran.tag).toBe('a');
    expect(readdirSync(underOpen)).toEqual([]);
    // a link to that parent is as unsafe as the parent
    const linkedParent = join(work, 'linked-parent');
    symlinkSync(openParent, linkedParent);
    const viaLink = await runInChild(bundle, join(linkedParent, 'cache2'));
    expect(viaLink.report.status).toBe('unusable-directory');
    expect(viaLink.report.reason).toContain('writable by other users');
    // positive controls: a parent closed to others, and a sticky one like /tmp
    const safeParent = join(work, 'safe-parent');
    mkdirSync(safeParent, { mode: 0o755 });
    chmodSync(safeParent, 0o755);
    const stickyParent = join(work, 'sticky-parent');
    mkdirSync(stickyParent);
    chmodSync(stickyParent, 0o1777);
    for (const parent of [safeParent, stickyParent]) {
      const dir = join(parent, 'cache');
      expect((await runInChild(bundle, dir)).report).toEqual({ status: 'miss', directory: dir });
      expect((await runInChild(bundle, dir)).report).toEqual({ status: 'hit', directory: dir });
    }
  });

  const root = process.getuid?.() === 0;
  it.skipIf(!root)(
    'a cache directory under a parent another user owns is refused (needs root to chown)',
    async () => {
      const bundle = fixture('a');
      const foreign = join(work, 'foreign-parent');
      mkdirSync(foreign, { mode: 0o755 });
      const dir = join(foreign, 'cache');
      // positive control: while it is ours, the cache is used
      expect((await runInChild(bundle, dir)).report.status).toBe('miss');
      chownSync(foreign, 65534, 65534);
      const refused = await runInChild(bundle, dir);
      expect(refused.report).toMatchObject({ status: 'unusable-directory', directory: dir });
      expect(refused.report.reason).toBe(`${foreign} is owned by another user`);
      expect(refused.ran.tag).toBe('a');
    },
  );
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

  it('two checkouts of the bin share a cache directory: the stack traces of the second name its own bundle', async () => {
    // copies under packages/doyen/node_modules, where the bundle's externals (etcd3, ws) resolve
    const copies = mkdtempSync(join(ROOT, 'packages/doyen/node_modules/.doyen-stack-test-'));
    try {
      const bins = ['checkout-a', 'checkout-b'].map((name) => {
        const dist = join(copies, name, 'dist');
        mkdirSync(dist, { recursive: true });
        for (const f of ['bin.js', 'compile-cache.js', 'cli-bundle.cjs'])
          copyFileSync(join(ROOT, 'packages/doyen/dist', f), join(dist, f));
        return join(dist, 'bin.js');
      });
      // an app whose setup, called from inside the bundle, logs the stack it was called on
      const app = join(copies, 'app.js');
      writeFileSync(
        app,
        "export function setup(node) { node.logger.info({ event: 'app.stack', stack: new Error('here').stack }, 'stack'); }\n",
      );
      const dir = cacheDir('two-bins');
      const start = async (bin: string) => {
        const [port] = await freePorts(1);
        const node = NodeProcess.spawn({
          args: [bin, 'node', '--cluster', 'stacks', '--host', '127.0.0.1', '--port', String(port)].concat([
            '--seeds',
            `127.0.0.1:${port}`,
            '--app',
            app,
          ]),
          env: { ...secretEnv(), DOYEN_COMPILE_CACHE: dir, DOYEN_LOG_LEVEL: 'info' },
        });
        started.push(Object.assign(node, { httpPort: undefined }));
        const stack = (await node.waitForEvent('app.stack', 30_000))?.stack as string;
        const cache = node.events().find((e) => e.event === 'node.compile-cache');
        return { node, stack, cache };
      };
      const [a, b] = bins as [string, string];
      const first = await start(a);
      expect(first.cache).toMatchObject({ status: 'miss' });
      expect(first.stack).toContain(join(a, '..', 'cli-bundle.cjs'));
      await eventually(() => readdirSync(dir).some((f) => f.endsWith('.v8')), {
        timeoutMs: 10_000,
        what: 'the cache file',
      });
      first.node.kill9();
      const second = await start(b);
      expect(second.stack).toContain(join(b, '..', 'cli-bundle.cjs'));
      expect(second.stack).not.toContain(join(a, '..'));
      second.node.kill9();
      // positive control: the first checkout, started again, reads the cache (it was filled)
      const again = await start(a);
      expect(again.cache).toMatchObject({ status: 'hit' });
      expect(again.stack).toContain(join(a, '..', 'cli-bundle.cjs'));
    } finally {
      rmSync(copies, { recursive: true, force: true });
    }
  }, 90_000);
});
