/**
 * The cluster console (issue 30) in a real Chromium: Debian's `/usr/bin/chromium` (or
 * DOYEN_CHROMIUM) driven by playwright-core, as the inspector's browser test does. With `netns`
 * the browser runs inside that network namespace (a wrapper script execs it through
 * `ip netns exec`), so it reaches nodes that only exist on the namespaces' bridge.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { REPO_ROOT } from './repo-root.js';

export const CHROMIUM = process.env.DOYEN_CHROMIUM ?? '/usr/bin/chromium';

/** What the browser tests lack here (undefined: nothing), for the skip notice. */
export function chromiumMissing(): string | undefined {
  return existsSync(CHROMIUM)
    ? undefined
    : `Chromium at ${CHROMIUM} (install it with bash .ci/chromium.sh, or set DOYEN_CHROMIUM)`;
}

/**
 * Where the console tests keep their screenshots: DOYEN_CONSOLE_ARTIFACTS, else
 * test-results/console/ in the repository (gitignored), made if absent.
 */
export function artifactDir(): string {
  const dir = process.env.DOYEN_CONSOLE_ARTIFACTS ?? join(REPO_ROOT, 'test-results', 'console');
  mkdirSync(dir, { recursive: true });
  return dir;
}

export interface ConsoleBrowser {
  readonly page: Page;
  /** Page errors, console errors and requests to any other origin than `origin`: a clean page has none. */
  readonly problems: string[];
  close(): Promise<void>;
}

/**
 * A fresh headless Chromium (its own profile) with one page in the light colour scheme,
 * recording what would make the page unclean. `origin` is the serving node's `http://host:port`.
 */
export async function openConsoleBrowser(
  origin: string,
  options: { netns?: string; width?: number; height?: number } = {},
): Promise<ConsoleBrowser> {
  const scratch = mkdtempSync(join(tmpdir(), 'doyen-console-chromium-'));
  let executablePath = CHROMIUM;
  if (options.netns) {
    executablePath = join(scratch, 'chromium-in-netns.sh');
    writeFileSync(executablePath, `#!/bin/sh\nexec ip netns exec ${options.netns} ${CHROMIUM} "$@"\n`);
    chmodSync(executablePath, 0o755);
  }
  const context: BrowserContext = await chromium.launchPersistentContext(join(scratch, 'profile'), {
    executablePath,
    headless: true,
    timeout: 30_000,
    colorScheme: 'light',
    viewport: { width: options.width ?? 1280, height: options.height ?? 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('request', (r) => {
    if (!r.url().startsWith(`${origin}/`)) problems.push(`request elsewhere: ${r.url()}`);
  });
  return {
    page,
    problems,
    async close() {
      await context.close();
      rmSync(scratch, { recursive: true, force: true });
    },
  };
}

/** The matrix cell of `observer` × `subject` (member keys). */
export const cellSelector = (observer: string, subject: string): string =>
  `[data-testid=matrix-cell][data-observer="${observer}"][data-subject="${subject}"]`;

export const memberSelector = (key: string): string => `[data-testid=member][data-key="${key}"]`;

/** Every matrix cell's `data-state`, keyed `observer>subject`. */
export async function matrixStates(page: Page): Promise<Record<string, string>> {
  return page.$$eval('[data-testid=matrix-cell]', (cells) =>
    Object.fromEntries(
      cells.map((c) => [
        `${c.getAttribute('data-observer')}>${c.getAttribute('data-subject')}`,
        c.getAttribute('data-state') ?? '',
      ]),
    ),
  );
}

/** The keys of the member rows shown, in order. */
export async function memberKeys(page: Page): Promise<string[]> {
  return page.$$eval('[data-testid=member]', (rows) => rows.map((r) => r.getAttribute('data-key') ?? ''));
}

/** The page's `/console/state` as the serving node answers it (keys and addresses of the views). */
export async function consoleNodes(
  origin: string,
): Promise<Record<string, { address: string; stale: boolean }>> {
  const r = await fetch(`${origin}/console/state`);
  return ((await r.json()) as { nodes: Record<string, { address: string; stale: boolean }> }).nodes;
}
