// Chromium for the browser tests, and what they check on every page: CSP violations, layout
// shifts, axe's accessibility rules. Screenshots go to SCREENSHOT_DIR (npm run screenshots
// points it at docs/screenshots; otherwise test-results/screenshots, not committed).
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { type Browser, type BrowserContext, type BrowserContextOptions, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, inject } from "vitest";
import { ROOT } from "../../dev/lib/project.ts";
import { stackApi, stackSecrets } from "../support/npm-start.ts";

export const stack = inject("stack");
export const BASE = `http://127.0.0.1:${stack.WORKER_PORT}`;
export const api = stackApi(stack.WORKER_PORT, stack.stateDir);
export const secrets = stackSecrets(stack.stateDir);

/**
 * One Debian Chromium headless shell for the calling test file, launched before its tests and closed after
 * them (playwright gives every launch a fresh temporary profile); call at the file's top level.
 */
export function chromiumForThisFile(): () => Browser {
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });
  return () => {
    if (!browser) throw new Error("chromium is not running: call chromiumForThisFile() at a test file's top level");
    return browser;
  };
}

/**
 * Chromium's headless shell (Debian's chromium-headless-shell, built from the same source as its
 * chromium), the build Playwright itself runs headless tests in. The full browser in headless
 * mode composites every frame as a window would: on the browser tests it took 77 CPU-seconds
 * against the shell's 31, time the other test files' crowds wait for on two cores.
 */
function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: "/usr/bin/chromium-headless-shell",
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-dev-shm-usage",
      "--disable-background-networking",
      "--no-first-run",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

export const PHONE: BrowserContextOptions = {
  viewport: { width: 360, height: 740 },
  deviceScaleFactor: 2,
  isMobile: true,
  hasTouch: true,
};

/**
 * A context whose pages record CSP violations and layout shifts from their first script on
 * (init scripts run through the DevTools protocol: the page's CSP does not apply to them).
 */
export async function newContext(browser: Browser, options: BrowserContextOptions = {}): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 }, ...options });
  await context.addInitScript(() => {
    const w = window as unknown as { __csp: string[]; __cls: number };
    w.__csp = [];
    w.__cls = 0;
    document.addEventListener("securitypolicyviolation", (e) => w.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries() as unknown as { value: number; hadRecentInput: boolean }[]) {
        if (!entry.hadRecentInput) w.__cls += entry.value;
      }
    }).observe({ type: "layout-shift", buffered: true });
  });
  return context;
}

/** What the CSP refused on this page so far. */
export const cspViolations = (page: Page) => page.evaluate(() => (window as unknown as { __csp: string[] }).__csp);

/** Cumulative layout shift not caused by the user, since the page loaded or the last reset. */
export const layoutShift = (page: Page) => page.evaluate(() => (window as unknown as { __cls: number }).__cls);

/** Starts the layout-shift count again, from a page that is already laid out. */
export const resetLayoutShift = (page: Page) =>
  page.evaluate(() => {
    (window as unknown as { __cls: number }).__cls = 0;
  });

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** axe-core's serious and critical findings on the page as it is now (WCAG 2.x A and AA). */
export async function seriousA11yViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: { run(o: unknown): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> };
      }
    ).axe;
    const result = await axe.run({
      runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] },
    });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => n.target.join(" ")) }));
  });
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.targets.join(", ")}`);
}

/** Whether the page is wider than its viewport (a phone would scroll sideways). */
export const scrollsSideways = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);

const SCREENSHOTS = path.resolve(ROOT, process.env.SCREENSHOT_DIR ?? "test-results/screenshots");

export async function screenshot(page: Page, name: string, { fullPage = true } = {}): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage, animations: "disabled" });
}

/** Opens the admin console in `page` (at `section`, a fragment such as "#create") and unlocks it with the stack's admin token. */
export async function unlockConsole(page: Page, section = ""): Promise<void> {
  await page.goto(`${BASE}/admin/${section}`);
  await page.getByLabel("Admin token").fill(secrets.ADMIN_TOKEN);
  await page.getByRole("button", { name: "Unlock" }).click();
  await page.getByRole("navigation", { name: "Console sections" }).waitFor();
}

/** Opens one of the console's sections from its nav ("Watch", "Create and edit", ...), and waits until it shows. */
export async function openSection(page: Page, name: string): Promise<void> {
  await page.getByRole("navigation", { name: "Console sections" }).getByRole("link", { name, exact: true }).click();
  await page.locator('.console-nav a[aria-current="page"]', { hasText: name }).waitFor();
}

/** Where sales' images live in these tests: an https origin the context answers itself (no network here). */
export const IMAGES = "https://images.example";

/**
 * Answers every request to IMAGES with a small SVG "product photo" in the colour its path
 * names (`${IMAGES}/0b57d0.svg`), so pages load https images as in production while the
 * page's CSP still decides whether they may. Returns the URLs the pages asked for.
 */
export async function serveImages(context: BrowserContext): Promise<string[]> {
  const asked: string[] = [];
  await context.route(`${IMAGES}/**`, (route) => {
    const url = route.request().url();
    asked.push(url);
    const colour = /\/([0-9a-f]{6})\.svg$/.exec(url)?.[1] ?? "54545c";
    const body =
      `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 400 300"><rect width="400" height="300" fill="#${colour}"/>` +
      `<path d="M70 200 q40-90 120-70 q50 10 90 40 q40 25 60 30 v25 h-270z" fill="#fff" opacity=".9"/>` +
      `<rect x="70" y="225" width="270" height="14" rx="7" fill="#1b1b1f" opacity=".8"/></svg>`;
    return route.fulfill({ status: 200, contentType: "image/svg+xml", body });
  });
  return asked;
}
