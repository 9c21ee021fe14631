// `node scripts/dashboard-screenshot.mjs [url] [out.png] [width] [height]`: opens the pool
// dashboard of a running app in Debian's Chromium (headless, through playwright-core), waits for
// a few live updates and saves a screenshot. docs/dashboard.png is made with it during `npm run load`.
/* global document */
import { chromium } from 'playwright-core';

const url = process.argv[2] ?? 'http://127.0.0.1:3000/pools/ui';
const out = process.argv[3] ?? 'dashboard.png';
const width = Number(process.argv[4] ?? 1280);
const height = Number(process.argv[5] ?? 900);

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: CHROMIUM_ARGS,
});
try {
  const page = await browser.newPage({ viewport: { width, height } });
  await page.goto(url);
  await page.waitForFunction(() => Number(document.body.dataset.updates ?? 0) >= 4, undefined, { timeout: 15_000 });
  await page.screenshot({ path: out, fullPage: process.env.FULL_PAGE === '1' });
  console.log(`saved ${out}`);
} finally {
  await browser.close();
}
