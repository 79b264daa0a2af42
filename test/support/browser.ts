/**
 * A real browser for the web pages' tests: Debian's chromium (installed by .ci/run, never
 * downloaded) driven by playwright-core, with a fresh profile; screenshots of a page at a
 * laptop's and a phone's size land in test/screenshots/ (not committed) for people to look at.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = path.join(__dirname, '..', 'screenshots');
export const SIZES = [
  { name: 'laptop', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
];

/** Whether the browser is here; a test file without it is skipped, saying so (`describeWithBrowser`). */
export const hasBrowser = existsSync(CHROMIUM);

/** `describe`, or `describe.skip` with a warning where there is no chromium (.ci/run installs it). */
export function describeWithBrowser(file: string): jest.Describe {
  if (!hasBrowser) console.warn(`${file} skipped: no browser at ${CHROMIUM} (.ci/run installs Debian's chromium)`);
  return hasBrowser ? describe : describe.skip;
}

export interface Browser {
  context: BrowserContext;
  page: Page;
  /** Full-page screenshots of the current page at each of SIZES, as `<name>-<w>x<h>.png`. */
  screenshots(name: string): Promise<void>;
  close(): Promise<void>;
}

export async function openBrowser(): Promise<Browser> {
  const profile = await mkdtemp(path.join(os.tmpdir(), 'sluice-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: SIZES[0],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  await mkdir(SCREENSHOTS, { recursive: true });
  return {
    context,
    page,
    async screenshots(name) {
      for (const size of SIZES) {
        await page.setViewportSize(size);
        await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-${size.width}x${size.height}.png`), fullPage: true });
      }
      await page.setViewportSize(SIZES[0]!);
    },
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** Signs in through the form from wherever the page was sent to sign in, and waits to leave it. */
export async function signIn(page: Page, baseUrl: string, name: string, token: string): Promise<void> {
  if (!page.url().includes('/sign-in')) await page.goto(`${baseUrl}/sign-in`);
  await page.getByLabel('Your name').fill(name);
  await page.getByLabel('Admin token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((url) => url.pathname !== '/sign-in');
}
