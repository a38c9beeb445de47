#!/usr/bin/env node
// The `doyen` bin: the bundled CLI (dist/cli-bundle.cjs, see scripts/bundle-cli.mjs), its
// compiled code cached between starts (compile-cache.ts).
import { fileURLToPath } from 'node:url';
import { runWithCodeCache } from './compile-cache.js';

// the bundle runs as a script, without import(): `--app` modules are imported from here, an ES
// module (app-module.ts's MODULE_IMPORTER; not imported, to keep the bin this small)
(globalThis as Record<symbol, unknown>)[Symbol.for('doyen.import-module')] = (url: string) => import(url);

runWithCodeCache(fileURLToPath(new URL('cli-bundle.cjs', import.meta.url)));
