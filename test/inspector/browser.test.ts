import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { DoyenNode } from '../../packages/doyen/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { eventually } from '../support/wait.js';
import { SYSTEM_MACHINES, startInspectedNode } from './support.js';

const CHROMIUM = process.env.DOYEN_CHROMIUM ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  console.warn(
    `[inspector browser test] skipped: no Chromium at ${CHROMIUM} (install it with bash .ci/chromium.sh, or set DOYEN_CHROMIUM)`,
  );
}

/** Where screenshots go: DOYEN_INSPECTOR_SCREENSHOTS, or a fresh temp dir. */
function screenshotDir(): string {
  const dir = process.env.DOYEN_INSPECTOR_SCREENSHOTS;
  if (dir) {
    mkdirSync(dir, { recursive: true });
    return dir;
  }
  return mkdtempSync(join(tmpdir(), 'doyen-inspector-'));
}

const nodes: DoyenNode[] = [];
let browser: BrowserContext | undefined;
let profile: string | undefined;
afterEach(async () => {
  await Promise.all(nodes.splice(0).map((n) => n.close()));
});
afterAll(async () => {
  await browser?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

/** Debian's Chromium with a fresh profile (playwright passes it as --user-data-dir). */
async function launch(): Promise<BrowserContext> {
  profile = mkdtempSync(join(tmpdir(), 'doyen-chromium-profile-'));
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    timeout: 30_000,
    viewport: { width: 1440, height: 900 },
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
}

const membership = 'section[data-path="/system/membership"]';
const activeState = (id: string) => `${membership} .state[data-state-id="${id}"][data-active="true"]`;

describe.skipIf(!haveChromium)('local inspector page in headless Chromium', () => {
  it('draws the system machines and highlights the current states live as a node joins', async () => {
    const [pA, pB, hA, hB] = await freePorts(4);
    // B's seed A is not running yet: B stays joining while the page watches it
    const b = await startInspectedNode(pB!, hB!, pA!, {}, { waitUntilUp: false });
    nodes.push(b);

    browser = await launch();
    const page = browser.pages()[0] ?? (await browser.newPage());
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    const external: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(`http://127.0.0.1:${hB}/`) && !r.url().startsWith(`ws://127.0.0.1:${hB}/`))
        external.push(r.url());
    });

    await page.goto(`http://127.0.0.1:${hB}/inspector`, { waitUntil: 'load' });
    await page.waitForSelector('#conn[data-state="live"]', { timeout: 10_000 });
    for (const path of SYSTEM_MACHINES)
      await page.waitForSelector(`section[data-path="${path}"] .state[data-active="true"]:not(.root)`, {
        timeout: 10_000,
      });
    await page.waitForSelector(
      `${activeState('membership.joining')}, ${activeState('membership.backingOff')}`,
      {
        timeout: 10_000,
      },
    );
    expect(await page.textContent('#node')).toBe(`127.0.0.1:${pB}`);
    // the chart: nested state boxes, transitions listed and drawn
    expect(
      await page
        .locator(
          `${membership} .state[data-state-id="membership.up"] .state[data-state-id="membership.up.member"]`,
        )
        .count(),
    ).toBe(1);
    expect(await page.locator(`${membership} ul.transitions li`).count()).toBeGreaterThan(5);
    expect(await page.locator(`${membership} svg.edges path[marker-end]`).count()).toBeGreaterThan(5);
    const dir = screenshotDir();
    await page.screenshot({ path: join(dir, 'inspector-joining.png'), fullPage: true });
    const updatesBefore = Number(await page.getAttribute(membership, 'data-updates'));
    const stampBefore = await page.getAttribute('#updated', 'data-at');

    // the seed comes up: B joins, and the page follows over the WebSocket
    nodes.push(await startInspectedNode(pA!, hA!, pA!));
    await page.waitForSelector(activeState('membership.up'), { timeout: 15_000 });
    await page.waitForSelector(`${activeState('membership.up.member')}`, { timeout: 15_000 });
    await page.waitForSelector(
      'section[data-path="/system/heartbeat"] .state[data-state-id="failureDetector.monitoring"][data-active="true"]',
      { timeout: 15_000 },
    );
    await eventually(
      async () =>
        (await page.textContent(`${membership} [data-role="context"]`))?.includes(`127.0.0.1:${pA}`),
      { what: "the seed's address in the membership context on the page" },
    );
    expect(
      await page
        .locator(`${activeState('membership.joining')}, ${activeState('membership.backingOff')}`)
        .count(),
    ).toBe(0);
    expect(await page.textContent(`${membership} [data-role="value"]`)).toBe('up.member');
    expect(Number(await page.getAttribute(membership, 'data-updates'))).toBeGreaterThan(updatesBefore);
    expect(await page.getAttribute('#updated', 'data-at')).not.toBe(stampBefore);

    // open the context of the membership machine for the picture, then take it
    await page.click(`${membership} details > summary`);
    const shot = join(dir, 'inspector-up.png');
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`[inspector browser test] screenshots: ${dir}`);
    expect(statSync(shot).size).toBeGreaterThan(30_000);
    expect(problems).toEqual([]);
    expect(external).toEqual([]);
  }, 90_000);
});
