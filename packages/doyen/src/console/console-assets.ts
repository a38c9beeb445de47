import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The page's files, shipped in the package's `console/` folder: nothing else is served. */
export const CONSOLE_ASSET_TYPES: Readonly<Record<string, string>> = {
  'index.html': 'text/html; charset=utf-8',
  'console.js': 'text/javascript; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
};

/** No inline script or style, nothing from elsewhere: the page talks to its own server only. */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; style-src-attr 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

export interface ConsoleAsset {
  readonly body: Buffer;
  readonly type: string;
}

let cached: ReadonlyMap<string, ConsoleAsset> | undefined;

/**
 * The page's files, read once. They sit in `packages/doyen/console/`, found from the sources
 * (`src/console/`), the compiled files (`dist/console/`) and the CLI bundle (`dist/`).
 */
export function consoleAssets(): ReadonlyMap<string, ConsoleAsset> {
  if (cached) return cached;
  const candidates = ['../../console/', '../console/'].map((p) => fileURLToPath(new URL(p, import.meta.url)));
  const dir = candidates.find((d) => existsSync(`${d}index.html`));
  const assets = new Map<string, ConsoleAsset>();
  if (dir)
    for (const [name, type] of Object.entries(CONSOLE_ASSET_TYPES))
      assets.set(name, { body: readFileSync(`${dir}${name}`), type });
  cached = assets;
  return assets;
}
