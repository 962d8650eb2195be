// Headless Chromium (Debian's package, driven by playwright-core) signed in to the console: the one way
// the suites that click through a page open it. Screenshots go to SHOTS; look at them.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { BASE } from './helpers.mjs';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SHOTS = new URL('./.state/screenshots/', import.meta.url).pathname;

/** Headless Chromium, launched as every suite launches it. Close it when done. */
export async function launch() {
  assert.ok(existsSync(CHROMIUM), `no browser at ${CHROMIUM}: scripts/setup.sh installs Debian's chromium for make test`);
  mkdirSync(SHOTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
}

/** A browser with a 1280×900 page signed in to the console with `key` (at its workspace's first page); a
 * script error on any page fails the test. Close `browser` when done. */
export async function signedIn(key) {
  const browser = await launch();
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  page.on('pageerror', (e) => { throw new Error(`page error: ${e.message}`); });
  await page.goto(`${BASE}/console`);
  await page.fill('input[name=key]', key);
  await page.click('button[type=submit]');
  await page.waitForURL('**/console/w/**');
  return { browser, page };
}
