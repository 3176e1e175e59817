// The browser tests' stack: `npm start` itself, on free ports and a state directory of its
// own (DEV_LOGIN on, as a developer gets it; one shop origin allowed to frame the storefront),
// and Debian's Chromium headless shell, installed like redis-server when it is missing.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { ensureDebianPackage } from "../../dev/lib/debian-packages.ts";
import { freePort } from "../../dev/lib/net.ts";
import { demoDrawSaleId, demoSaleId, npmStart, stopNpmStart } from "../support/npm-start.ts";

export default async function setup(project: TestProject) {
  ensureDebianPackage("chromium-headless-shell", "chromium-headless-shell");
  const stateDir = mkdtempSync(path.join(tmpdir(), "browser-tests-"));
  const ports = {
    WORKER_PORT: await freePort(),
    GATEWAY_PORT: await freePort(),
    REDIS_PORT: await freePort(),
    BEACON_PORT: await freePort(),
  };
  // One address drives every browser here: no per-IP limit (the sale's own admission still applies).
  // The shop that frames the storefront: a page a test serves on this port (a loopback origin,
  // since Chromium refuses a public page's frame of a loopback address).
  const shopPort = await freePort();
  const shopOrigin = `http://127.0.0.1:${shopPort}`;
  // Chromium shares two cores with other test files' crowds: allow slow Redis answers, as every
  // other test stack does (wrangler.toml's 1.5 s suits Upstash, not a starved local redis-server).
  const run = npmStart(ports, stateDir, { IP_RATE_LIMIT: "0", ALLOWED_ORIGINS: shopOrigin, REDIS_TIMEOUT_MS: "10000" });
  const { output, exitCode } = await run.ready;
  if (exitCode !== null) throw new Error(`npm start exited (${exitCode}):\n${output}`);
  project.provide("stack", {
    ...ports,
    stateDir,
    shopPort,
    shopOrigin,
    demoSaleId: demoSaleId(output),
    demoDrawSaleId: demoDrawSaleId(output),
  });

  return async () => {
    await stopNpmStart(run.child, stateDir);
    rmSync(stateDir, { recursive: true, force: true });
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    stack: {
      WORKER_PORT: number;
      GATEWAY_PORT: number;
      REDIS_PORT: number;
      BEACON_PORT: number;
      stateDir: string;
      /** An origin in ALLOWED_ORIGINS (127.0.0.1 on shopPort): a shop that may frame the storefront and hand it a token. */
      shopPort: number;
      shopOrigin: string;
      demoSaleId: string;
      /** npm start's demo draw: its beacon is the stack's (dev/stack/local-beacon.ts). */
      demoDrawSaleId: string;
    };
  }
}
