// `doyen node` from the built bundle (packages/doyen/dist/bin.js), with tsx loaded only for a
// TypeScript `--app` module: a node starts on ~0.35 s of CPU instead of ~1.1 s from the sources
// under tsx (2026-11-27, to `member.up`), which matters when a run starts six at once on two cores.
// The bundle is what the nodes run, so a bundle older than the sources would test old code:
// `bundleStaleness` names the newest source file the last build did not see.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { COMPILED_CLI, compiledCli } from '../../test/support/cli-process.js';

const PACKAGES = fileURLToPath(new URL('../../packages', import.meta.url));
/** The file the build writes last (bin.js only loads it). */
const BUNDLE = join(COMPILED_CLI, '..', 'cli-bundle.cjs');

/** Node's arguments for the built CLI, tsx loaded for a TypeScript app module, then `cliArgs`. */
export function builtCliArgs(cliArgs: readonly string[]): string[] {
  // DOYEN_BENCH_CLI=path/to/bin.js: another build (a worktree of an older commit), for an A/B of two builds
  return ['--import', import.meta.resolve('tsx'), process.env.DOYEN_BENCH_CLI ?? compiledCli(), ...cliArgs];
}

function newestTs(dir: string, newest: { path: string; ms: number }): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newestTs(path, newest);
    else if (entry.name.endsWith('.ts')) {
      const ms = statSync(path).mtimeMs;
      if (ms > newest.ms) {
        newest.path = path;
        newest.ms = ms;
      }
    }
  }
}

/**
 * Why the built bundle may not be what the sources say (missing, or older than a source file of
 * some package), or undefined when it is newer than every `packages/<name>/src` file. The paths
 * default to this repository's (a test passes its own).
 */
export function bundleStaleness({ bundle = BUNDLE, packages = PACKAGES } = {}): string | undefined {
  if (process.env.DOYEN_BENCH_CLI) return undefined; // another build, judged by whoever built it
  let built: number;
  try {
    built = statSync(bundle).mtimeMs;
  } catch {
    return `${bundle} is missing: run \`pnpm build\` first`;
  }
  const newest = { path: '', ms: 0 };
  for (const pkg of readdirSync(packages, { withFileTypes: true })) {
    if (!pkg.isDirectory()) continue;
    const src = join(packages, pkg.name, 'src');
    try {
      if (statSync(src).isDirectory()) newestTs(src, newest);
    } catch {
      // a package without sources
    }
  }
  return newest.ms > built
    ? `${newest.path} changed after the last build (${bundle}): run \`pnpm build\` first`
    : undefined;
}
