// Runs the bundled CLI through V8's code cache. Compiling the 1.8 MB bundle was a third of a
// node's start-up CPU; with the code of an earlier start cached it is read back instead (what
// Node 22's module.enableCompileCache() does; Node 20 has none).
//
// The cache is one file per bundle content and Node version, in a directory only this user can
// write: DOYEN_COMPILE_CACHE names it (default: the OS temp dir's doyen-compile-cache-UID), or
// turns it off with "off". V8 checks its own version and flags but, of the source, only the
// length: the file name carries a hash of the content, so another build never reads this one's.
// Anything wrong with the cache (unreadable, rejected, unsafe directory) falls back to compiling.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { createRequire, Module } from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as vm from 'node:vm';

/**
 * What the bin found: `hit` (read back), `miss` (none yet: compiled, and written once the node
 * had time to start), `rejected` (V8 refused it: rewritten), `off`, `unusable-directory` (it
 * could not be made, or is not a directory of ours that only we can write: not used).
 */
export type CompileCacheStatus = 'hit' | 'miss' | 'rejected' | 'off' | 'unusable-directory';

export interface CompileCacheReport {
  readonly status: CompileCacheStatus;
  readonly directory: string | undefined;
}

const REPORT = Symbol.for('doyen.compile-cache');

/** What the bin did with the cache, for the CLI's log; undefined when run without the bin. */
export function compileCacheReport(): CompileCacheReport | undefined {
  return (globalThis as Record<symbol, CompileCacheReport | undefined>)[REPORT];
}

/** Written this long after the start, so that the cache holds the start-up path's code too. */
const SAVE_AFTER_MS = 2000;

function cacheDirectory(env: NodeJS.ProcessEnv): string | undefined {
  const setting = env.DOYEN_COMPILE_CACHE;
  if (setting === 'off') return undefined;
  return setting || path.join(tmpdir(), `doyen-compile-cache-${process.getuid?.() ?? 'user'}`);
}

/** A directory, not a link, ours, writable by nobody else: whatever is in it, we wrote. */
function safeDirectory(dir: string): boolean {
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const s = fs.lstatSync(dir);
    const ours = process.getuid === undefined || s.uid === process.getuid();
    return s.isDirectory() && ours && (s.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

function readIfThere(file: string): Buffer | undefined {
  try {
    return fs.readFileSync(file);
  } catch {
    return undefined;
  }
}

/** Write then rename: nodes starting together never read a half-written file. */
function save(file: string, data: Buffer): void {
  const partial = `${file}.${process.pid}`;
  try {
    fs.writeFileSync(partial, data, { mode: 0o600 });
    fs.renameSync(partial, file);
  } catch {
    fs.rmSync(partial, { force: true });
  }
}

/**
 * Loads and runs the CommonJS file `bundle` as require() would, its compiled code cached; says
 * what it did with the cache (also left for the CLI to log, see compileCacheReport()).
 */
export function runWithCodeCache(
  bundle: string,
  options: { readonly env?: NodeJS.ProcessEnv; readonly saveAfterMs?: number } = {},
): CompileCacheReport {
  const bytes = fs.readFileSync(bundle);
  const raw = bytes.toString('utf8');
  // a shebang is a syntax error inside the wrapper: comment it out (same lines, same columns)
  const source = raw.startsWith('#!') ? `//${raw.slice(2)}` : raw;
  const directory = cacheDirectory(options.env ?? process.env);
  const usable = directory !== undefined && safeDirectory(directory);
  // the bytes hash in ~2 ms, the decoded string in ~6
  const key = createHash('sha256').update(`${process.version} ${process.arch}\n`).update(bytes).digest('hex');
  const file = usable ? path.join(directory, `cli-${key.slice(0, 32)}.v8`) : undefined;
  const cachedData = file ? readIfThere(file) : undefined;
  const script = new vm.Script(Module.wrap(source), {
    filename: bundle,
    // no import() inside: scripts/bundle-cli.mjs turned each into require()
    ...(cachedData ? { cachedData } : {}),
  });
  const status: CompileCacheStatus =
    directory === undefined
      ? 'off'
      : !file
        ? 'unusable-directory'
        : !cachedData
          ? 'miss'
          : script.cachedDataRejected
            ? 'rejected'
            : 'hit';
  const report = { status, directory };
  (globalThis as Record<symbol, CompileCacheReport>)[REPORT] = report;
  if (file && status !== 'hit')
    setTimeout(() => save(file, script.createCachedData()), options.saveAfterMs ?? SAVE_AFTER_MS).unref();
  const commonJsModule = { exports: {} };
  const run = script.runInThisContext() as (
    exports: unknown,
    require: NodeJS.Require,
    module: unknown,
    filename: string,
    dirname: string,
  ) => void;
  run.call(
    commonJsModule.exports,
    commonJsModule.exports,
    createRequire(bundle),
    commonJsModule,
    bundle,
    path.dirname(bundle),
  );
  return report;
}
