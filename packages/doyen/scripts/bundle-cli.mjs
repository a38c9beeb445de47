// Bundles the compiled CLI (dist/cli.js, tsc's output) and everything it imports into one
// CommonJS file, dist/cli-bundle.cjs, which the `doyen` bin (dist/bin.js) runs with its code
// cached. Loading ~150 modules through Node's ESM loader was most of a node's start-up: a lone
// node was up on ~0.70 s of CPU in 75 MB of RSS, and is on ~0.32 s in 59 MB from one file.
// CommonJS, as only a script can be compiled with V8's code cache (vm.Script) on Node 20.
// Run by `pnpm build`, after tsc.
import { chmodSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const dist = fileURLToPath(new URL('../dist/', import.meta.url));
const outfile = `${dist}cli-bundle.cjs`;

await build({
  entryPoints: [`${dist}cli.js`],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  // the bin compiles the bundle as a script (vm.Script), where import() needs an experimental
  // loader hook: every import() becomes require() (of an ES module, such as @statelyai/inspect,
  // too: Node >= 20.19 requires ES modules)
  supported: { 'dynamic-import': false },
  target: 'node20',
  logLevel: 'warning',
  // V8 keeps a script's source for as long as it runs (lazy functions compile from it): the
  // unminified 2.2 MB, made two-byte by a few non-ASCII characters in comments, held 4.4 MB of
  // each node's heap. Without comments and whitespace it is 1.5 MB of ASCII (charset: escapes
  // what is left). Names stay (identifiers are not minified): stack traces still read.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  charset: 'ascii',
  // the sources are ES modules: import.meta.url becomes the bundle's own URL
  define: { 'import.meta.url': '__doyenBundleUrl' },
  // ("use strict" first: a directive after the banner's statement would be none)
  banner: {
    js: "'use strict';\nconst __doyenBundleUrl = require('node:url').pathToFileURL(__filename).href;",
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
const bundled = readFileSync(outfile);
if (/\bimport\(/.test(bundled.toString('latin1')))
  throw new Error(`${outfile} still calls import(), which the bin's vm.Script cannot run`);
// one non-ASCII character makes V8 hold the whole source at two bytes a character
const wide = bundled.findIndex((byte) => byte > 0x7f);
if (wide >= 0)
  throw new Error(`${outfile} has a non-ASCII byte at ${wide}: V8 would hold it at twice its size`);
chmodSync(`${dist}bin.js`, 0o755);
