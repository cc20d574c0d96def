// Signing in to the console in a real Chromium (playwright-core): a fresh browser context, the
// API-key prompt filled and submitted, the inbox shown.
//
//   const page = await signInWithKey(browser, srv.url, 'key-alice-000', WAIT_MS);
import type { Browser, Page } from 'playwright-core';

/** A fresh browser session signed in with `key`, on the inbox; `waitMs` is its default timeout. */
export async function signInWithKey(browser: Browser, baseUrl: string, key: string, waitMs: number): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(waitMs);
  await page.goto(`${baseUrl}/`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Inbox' }).waitFor();
  return page;
}
