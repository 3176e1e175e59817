import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";
import { TEST_SECRETS as TURNSTILE_TEST_SECRETS, TEST_SITE_KEY as TURNSTILE_TEST_SITE_KEY } from "./dev/turnstile/test-keys.ts";
import { TEST_SECRETS } from "./test/setup/secrets.ts";

/** Lua scripts as text, as wrangler's Text rule gives them to the Worker (for src/locks/ in Node). */
const luaAsText = {
  name: "lua-as-text",
  enforce: "pre" as const,
  transform: (code: string, id: string) => (id.endsWith(".lua") ? `export default ${JSON.stringify(code)};` : undefined),
};

/**
 * The Worker project sends every module through Vite into each test file's own workerd, and
 * Vite inlines a base64 source map into each: for zod and @upstash/redis that made 8.5 MB a
 * file, serialised and compressed in Node and parsed in workerd anew for each of 31 files (the
 * project took 156 CPU-seconds, 139 without them). Dependencies keep their code and lose their
 * maps; the project's own modules keep theirs, so a failure still points at its source line.
 */
const noDependencyMaps = {
  name: "no-dependency-source-maps",
  enforce: "pre" as const,
  // Rollup's convention, which Vite keeps: a map of `{ mappings: "" }` means "no source map".
  transform: (code: string, id: string) => (id.includes("/node_modules/") ? { code, map: { mappings: "" } } : undefined),
};

/**
 * The files that take longest (half a minute to a few minutes on two busy cores), longest
 * first. Vitest otherwise starts project after project (browser, node, worker), each project's
 * files by size until it has timings of its own (never, on a fresh clone): a long file that is
 * small, like the bench's, started late and ran on alone for minutes at the end of the run.
 */
const LONGEST_FILES = [
  "test/node/bench.test.ts",
  "test/node/action-costs.test.ts",
  "test/browser/waiting-room.test.ts",
  "test/node/lifecycle-crowd.test.ts",
  "test/browser/storefront.test.ts",
  "test/browser/lanes.test.ts",
  "test/node/drop-operations.test.ts",
  "test/browser/draws.test.ts",
  "test/worker/fuzz.test.ts",
  "test/browser/console.test.ts",
  "test/browser/console-sections.test.ts",
  "test/node/record-limit.test.ts",
];

// A listed file renamed or removed fails the run here, rather than drop out of the order unseen.
for (const file of LONGEST_FILES)
  if (!existsSync(path.join(import.meta.dirname, file))) throw new Error(`LONGEST_FILES names ${file}, which does not exist`);

/** Starts LONGEST_FILES first, in their order, then the rest in Vitest's. */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const at = LONGEST_FILES.indexOf(path.relative(import.meta.dirname, file.moduleId));
      return at === -1 ? LONGEST_FILES.length : at;
    };
    // Array.prototype.sort is stable: the files not listed keep Vitest's order.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

/** First in every project: marks the run before anything starts, so nothing it starts outlives it. */
const PROCESS_GUARD = "test/setup/process-guard.ts";

export default defineConfig({
  test: {
    // Two test files more than the cores: the files spend much of their time waiting on real
    // processes, queue delays and timers (a payment window, a lease, a page's countdown), and
    // the others keep the cores busy meanwhile. On two cores beside two CPU-burning processes
    // (npm run test:busy), three files at once took the suite from 722 s to 502 s, and four
    // from 431 s to 384 s. Five were faster still (361 s), but the crowds' liveness bounds
    // and Miniflare's local queue failed under them.
    maxWorkers: availableParallelism() + 2,
    // Stopping the stacks (npm start's wrangler, Miniflare, gateways) takes seconds on a busy
    // machine: give the teardowns time to finish rather than exit from under them.
    teardownTimeout: 30_000,
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        // Node-side tests: the gateway, Lua scripts and dev tooling against a real redis-server.
        plugins: [luaAsText],
        test: {
          name: "node",
          environment: "node",
          include: ["test/node/**/*.test.ts", "test/gateway/**/*.test.ts"],
          // A fork runs file after file with the modules it loaded kept (Miniflare, undici, the
          // Worker's sources through Vite): each file starts and stops its own stacks and names its
          // own sales and users, so none depends on a fresh module state. Loading them anew for each
          // of 40 files, the forks took 120 CPU-seconds of the project's 268; kept, 84 of 221 (the
          // spike's retries after Retry-After landed between the two runs, a few seconds of that).
          isolate: false,
          globalSetup: [PROCESS_GUARD],
          // Liveness bounds, not performance claims: a 2,000-buyer spike on two cores that other
          // work keeps busy takes minutes, and must still pass.
          testTimeout: 240_000,
          hookTimeout: 120_000,
        },
      },
      {
        // The storefront and the admin console in Chromium's headless shell against `npm start`, beside
        // the other files (its stack allows slow Redis answers: test/browser/global-setup.ts).
        test: {
          name: "browser",
          environment: "node",
          include: ["test/browser/**/*.test.ts"],
          globalSetup: [PROCESS_GUARD, "test/browser/global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        // The Worker inside workerd (Miniflare) with local D1 and Queues, talking to a real
        // redis-server through the project's Upstash gateway.
        plugins: [
          noDependencyMaps,
          cloudflareTest(async ({ inject }) => ({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                ...TEST_SECRETS,
                PAYMENT_PROVIDER: "dev",
                // Two shared cores run workerd, the gateway, Redis and another test file's whole
                // stack: allow slow answers, as the local stack does (tests of the timeout set theirs).
                REDIS_TIMEOUT_MS: "10000",
                // Every request of the suite comes from one address (or none): no per-IP limit,
                // except where test/worker/limits.test.ts turns it on.
                IP_RATE_LIMIT: "0",
                // Likewise for the global per-address limits: the suite's many deliberate 401s and
                // webhooks share one address; test/worker/hardening.test.ts sets its own.
                ADMIN_AUTH_FAILURES_PER_MIN: "1000000",
                WEBHOOK_RATE_PER_MIN: "1000000",
                // The per-user and per-address global limits are off ("0"): suite users poll and
                // pay far more than a person; test/worker/global-limits.test.ts sets its own.
                QUEUE_JOINS_PER_USER_PER_MIN: "0",
                QUEUE_JOINS_PER_IP_PER_MIN: "0",
                DRAW_ENTRIES_PER_USER_PER_MIN: "0",
                DRAW_ENTRIES_PER_IP_PER_MIN: "0",
                DEV_LOGINS_PER_USER_PER_MIN: "0",
                DEV_LOGINS_PER_IP_PER_MIN: "0",
                ORDER_CHANGES_PER_USER_PER_MIN: "0",
                ORDER_CHANGES_PER_IP_PER_MIN: "0",
                ORDER_READS_PER_USER_PER_MIN: "0",
                ORDER_READS_PER_IP_PER_MIN: "0",
                UPSTASH_REDIS_REST_URL: inject("gatewayUrl"),
                UPSTASH_REDIS_REST_TOKEN: inject("gatewayToken"),
                TEST_SCRATCH_REDIS_URL: inject("scratchGatewayUrl"),
                JWT_JWKS_URL: inject("jwksUrl"),
                TEST_SIGNING_KEYS: inject("signingKeys"),
                TEST_BEACON_URL: inject("beaconUrl"),
                // Turnstile: the local stand-in (started in test/setup/global-setup.ts) with
                // Cloudflare's always-passing test secret; tests switch to the others per request.
                // The Worker accepts a published test secret only where it serves loopback hosts
                // alone (LOOPBACK_HOSTS_ONLY, off here as in a deployment): the tests that pass
                // tokens run as the local stack does (test/worker/helpers.ts, fetchAsLocalStack).
                TURNSTILE_VERIFY_URL: inject("siteverifyUrl"),
                TURNSTILE_SECRET_KEY: TURNSTILE_TEST_SECRETS.passes,
                TURNSTILE_SITE_KEY: TURNSTILE_TEST_SITE_KEY,
                // The funnel's data points: the local stand-in (test/setup/global-setup.ts) keeps them.
                ANALYTICS_STAND_IN_URL: inject("analyticsStandInUrl"),
                TEST_MIGRATIONS: await readD1Migrations(path.join(import.meta.dirname, "migrations")),
              },
            },
          })),
        ],
        test: {
          name: "worker",
          include: ["test/worker/**/*.test.ts"],
          globalSetup: [PROCESS_GUARD, "test/setup/global-setup.ts"],
          setupFiles: ["test/setup/apply-migrations.ts"],
          testTimeout: 120_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
