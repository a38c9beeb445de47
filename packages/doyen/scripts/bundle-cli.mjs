// Bundles the compiled CLI (dist/cli.js, tsc's output) and everything it imports into one file,
// dist/cli-bundle.js: the `doyen` bin. Loading ~150 modules through Node's ESM loader was most of
// a node's start-up: a lone node was up on ~0.70 s of CPU in 75 MB of RSS, and is on ~0.32 s in
// 59 MB from one file. Run by `pnpm build`, after tsc.
import { chmodSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const dist = fileURLToPath(new URL('../dist/', import.meta.url));
const outfile = `${dist}cli-bundle.js`;

await build({
  entryPoints: [`${dist}cli.js`],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  logLevel: 'warning',
  // the CommonJS dependencies (pino, ws, prom-client…) call require(): give the ES module one
  banner: {
    js: "import { createRequire as __doyenCreateRequire } from 'node:module';\nconst require = __doyenCreateRequire(import.meta.url);",
  },
  // @opentelemetry/api is bundled (prom-client requires it as it loads); tracing.ts looks up the
  // app's copy at run time, and only once an SDK registered something
  external: [
    // optional native speed-ups of ws and msgpackr, used when installed next to doyen
    'bufferutil',
    'utf-8-validate',
    'msgpackr-extract',
    // reads its .proto files from its own directory at run time
    'etcd3',
    // loaded only with --inspect, and large
    '@statelyai/inspect',
  ],
});
chmodSync(outfile, 0o755);
