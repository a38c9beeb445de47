#!/usr/bin/env node
// The `doyen` bin: the bundled CLI (dist/cli-bundle.cjs, see scripts/bundle-cli.mjs), its
// compiled code cached between starts (compile-cache.ts).
import { fileURLToPath } from 'node:url';
import { runWithCodeCache } from './compile-cache.js';

runWithCodeCache(fileURLToPath(new URL('cli-bundle.cjs', import.meta.url)));
