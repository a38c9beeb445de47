// Runs the bundled CLI through V8's code cache. Compiling the 1.8 MB bundle was a third of a
// node's start-up CPU; with the code of an earlier start cached it is read back instead (what
// Node 22's module.enableCompileCache() does; Node 20 has none).
//
// The cache is one file per bundle content, bundle path and Node version, in a directory only
// this user can write: DOYEN_COMPILE_CACHE names it (default: the OS temp dir's
// doyen-compile-cache-UID), or turns it off with "off". V8 checks its own version and flags
// but, of the source, only the length: code cached from another source of the same length runs
// as if it were this one. So the file starts with the full hash of the content it was made from,
// checked before V8 sees it (the name carries the hash too, so builds do not overwrite each
// other's). What is in the directory is trusted only because nobody else can put it there: the
// directory and every directory above it must be ours or root's and writable by nobody else (a
// sticky one, like /tmp, keeps others from renaming our entries), and the file is checked on the
// descriptor it is read from.
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
  /** Why the directory is unusable or the entry was rejected (logged with the status). */
  readonly reason?: string;
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

const uid = process.getuid?.();

/** Ours (or root's, for the directories above): without uids (Windows) there is nothing to check. */
function ownedWell(s: fs.Stats, rootToo: boolean): boolean {
  return uid === undefined || s.uid === uid || (rootToo && s.uid === 0);
}

/** Writable by nobody else; a sticky directory (/tmp) is writable, but nobody can rename what is ours in it. */
function closedToOthers(s: fs.Stats, stickyToo: boolean): boolean {
  return uid === undefined || (s.mode & 0o022) === 0 || (stickyToo && (s.mode & 0o1000) !== 0);
}

/** Why a directory above the cache lets someone else swap what is below it; undefined when none does. */
function unsafeAncestor(dir: string): string | undefined {
  for (let at = path.dirname(dir); ; at = path.dirname(at)) {
    const s = fs.lstatSync(at);
    // a link is as safe as the directory holding it (checked next) and the directory it names
    if (s.isSymbolicLink()) {
      if (!ownedWell(s, true)) return `${at} is a link owned by another user`;
      const unsafe = unsafeDirectoryChain(fs.realpathSync(at));
      if (unsafe) return unsafe;
    } else if (!ownedWell(s, true)) return `${at} is owned by another user`;
    else if (!closedToOthers(s, true)) return `${at} is writable by other users`;
    if (path.dirname(at) === at) return undefined;
  }
}

/** A real (link-free) directory and all above it: ours or root's, closed to others (sticky allowed). */
function unsafeDirectoryChain(real: string): string | undefined {
  for (let at = real; ; at = path.dirname(at)) {
    const s = fs.statSync(at);
    if (!ownedWell(s, true)) return `${at} is owned by another user`;
    if (!closedToOthers(s, true)) return `${at} is writable by other users`;
    if (path.dirname(at) === at) return undefined;
  }
}

/**
 * Why `dir` cannot hold the cache, undefined when it can: it must be a directory (not a link),
 * ours, writable by nobody else, and so must be everything above it (see the top of the file).
 */
function unsafeDirectory(dir: string): string | undefined {
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const s = fs.lstatSync(dir);
    if (!s.isDirectory()) return `${dir} is not a directory (a link is not followed)`;
    if (!ownedWell(s, false)) return `${dir} is owned by another user`;
    if (!closedToOthers(s, false)) return `${dir} is writable by other users`;
    return unsafeAncestor(path.resolve(dir));
  } catch (error) {
    return `${dir}: ${(error as Error).message}`;
  }
}

/** First line of a cache file: what wrote it, then the full hash of the source and Node it was made for. */
const MAGIC = 'doyen-v8-cache 1';
const headerOf = (key: string) => Buffer.from(`${MAGIC} ${key}\n`);

/** What the cache file holds for `key`: V8's data, or why it cannot be used. */
type Entry = { readonly data: Buffer } | { readonly refused: string } | undefined;

/**
 * Opens the file once, without following a link, and checks the descriptor it reads from (a
 * regular file of ours nobody else may write), then the header: a file made for another source
 * is refused, whatever its length. Undefined when there is none.
 */
function readEntry(file: string, key: string): Entry {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? undefined : { refused: `cannot open it (${code ?? 'error'})` };
  }
  try {
    const s = fs.fstatSync(fd);
    if (!s.isFile()) return { refused: 'not a regular file' };
    if (!ownedWell(s, false)) return { refused: 'owned by another user' };
    if (!closedToOthers(s, false)) return { refused: 'writable by other users' };
    const bytes = fs.readFileSync(fd);
    const header = headerOf(key);
    if (bytes.length <= header.length || !bytes.subarray(0, header.length).equals(header))
      return { refused: 'made for another source' };
    return { data: bytes.subarray(header.length) };
  } catch (error) {
    return { refused: `cannot read it (${(error as Error).message})` };
  } finally {
    fs.closeSync(fd);
  }
}

/** Write (a new file, never through a link) then rename: nodes starting together never read a half-written file. */
function save(file: string, key: string, data: Buffer): void {
  const partial = `${file}.${process.pid}`;
  try {
    fs.writeFileSync(partial, Buffer.concat([headerOf(key), data]), { mode: 0o600, flag: 'wx' });
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
  const unusable = directory === undefined ? undefined : unsafeDirectory(directory);
  // the bytes hash in ~2 ms, the decoded string in ~6. The bundle's path is in the key too: V8's
  // cached code keeps the script name it was compiled with (the filename given below is not used
  // on a hit), so stack traces of another copy of the same bundle would name the first copy's path
  const key = createHash('sha256')
    .update(`${process.version} ${process.arch}\n${bundle}\n`)
    .update(bytes)
    .digest('hex');
  const file =
    directory !== undefined && !unusable ? path.join(directory, `cli-${key.slice(0, 32)}.v8`) : undefined;
  const entry = file ? readEntry(file, key) : undefined;
  const cachedData = entry && 'data' in entry ? entry.data : undefined;
  const script = new vm.Script(Module.wrap(source), {
    filename: bundle,
    // no import() inside: scripts/bundle-cli.mjs turned each into require()
    ...(cachedData ? { cachedData } : {}),
  });
  const refused = entry && 'refused' in entry ? entry.refused : undefined;
  const status: CompileCacheStatus =
    directory === undefined
      ? 'off'
      : !file
        ? 'unusable-directory'
        : refused
          ? 'rejected'
          : !cachedData
            ? 'miss'
            : script.cachedDataRejected
              ? 'rejected'
              : 'hit';
  const reason = unusable ?? refused ?? (status === 'rejected' ? 'V8 refused it' : undefined);
  const report: CompileCacheReport = { status, directory, ...(reason ? { reason } : {}) };
  (globalThis as Record<symbol, CompileCacheReport>)[REPORT] = report;
  if (file && status !== 'hit')
    setTimeout(
      () => save(file, key, script.createCachedData()),
      options.saveAfterMs ?? SAVE_AFTER_MS,
    ).unref();
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
