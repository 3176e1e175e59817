// What every local Worker needs and only wrangler makes: the bundle `wrangler deploy` would
// ship, a local D1 with migrations/ applied, and wrangler.toml as wrangler reads it. Each is
// made once per content and kept under node_modules/.cache/flash-sale, named by a hash of
// what it is made from: the stacks a test run or a benchmark starts would otherwise each run
// wrangler twice and import it once (about 4 s, 8 s and 2 s on two busy cores, most of it
// wrangler's own start-up). Any change to the inputs makes a new entry; `npm ci` clears them.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { WorkerOptions } from "miniflare";
import { cached, hashOf } from "../lib/build-cache.ts";
import { offlineWranglerEnv, ROOT, WRANGLER } from "../lib/project.ts";
import { bundleWorker } from "../lib/worker-bundle.ts";

const QUIET_WRANGLER = offlineWranglerEnv({ WRANGLER_LOG: "error" });

/** What the bundle is made from (package-lock.json: the versions of wrangler and of every import). */
const BUNDLE_INPUTS = ["src", "lua", "wrangler.toml", "tsconfig.json", "package-lock.json"];
/** What a migrated database is made from. */
const D1_INPUTS = ["migrations", "package-lock.json"];
/** What the Worker's configuration is read from. */
const CONFIG_INPUTS = ["wrangler.toml", "package-lock.json"];

/** Runs wrangler offline in the project, quietly. */
function wrangler(args: string[], env: NodeJS.ProcessEnv = QUIET_WRANGLER): void {
  execFileSync(WRANGLER, args, { cwd: ROOT, env, stdio: ["ignore", "ignore", "inherit"] });
}

/** The Worker's bundle, exactly as `wrangler deploy` would build it (unminified for a profiler to read). */
export function workerBundle({ minify }: { minify: boolean }): string {
  const entry = cached(`worker-${hashOf(BUNDLE_INPUTS)}${minify ? "" : "-unminified"}`, (dir) =>
    bundleWorker(dir, { minify, quiet: true }),
  );
  return path.join(entry, "index.js");
}

/** Applies migrations/ to the local D1 under `stateDir` with wrangler. */
function migrateLocalD1(stateDir: string): void {
  wrangler(["d1", "migrations", "apply", "DB", "--local", "--persist-to", stateDir], { ...QUIET_WRANGLER, CI: "true" });
}

/**
 * Makes the local D1 under `stateDir` current with migrations/: a new state directory gets a
 * copy of a database migrated once; one a stack used before is migrated by wrangler, unless
 * the migrations it was last brought to are these.
 */
export function prepareLocalD1(stateDir: string): void {
  const migrations = hashOf(D1_INPUTS);
  const marker = path.join(stateDir, "migrated-to");
  const d1 = path.join("v3", "d1");
  if (!existsSync(path.join(stateDir, d1))) {
    const template = cached(`d1-${migrations}`, migrateLocalD1);
    cpSync(path.join(template, d1), path.join(stateDir, d1), { recursive: true });
  } else if (!existsSync(marker) || readFileSync(marker, "utf8") !== migrations) {
    migrateLocalD1(stateDir);
  }
  writeFileSync(marker, migrations);
}

/** A `[[queues.consumers]]` entry of wrangler.toml. */
interface ConsumerConfig {
  queue: string;
  max_batch_size?: number;
  max_batch_timeout?: number;
  max_retries?: number;
  dead_letter_queue?: string;
}

/** What Miniflare needs of wrangler.toml, as wrangler reads it (what `wrangler dev` would run). */
export interface WorkerConfig {
  vars: Record<string, string>;
  compatibilityDate: string;
  compatibilityFlags: string[];
  queueProducers: { binding: string; queue: string }[];
  queueConsumers: ConsumerConfig[];
  /** The pages under public/ in front of the Worker, routed as in production ([assets]). */
  assets: WorkerOptions["assets"];
  /** The lab's Durable Objects, as [[migrations]] declares them. */
  durableObjects: WorkerOptions["durableObjects"];
  /** The funnel's Analytics Engine dataset ([[analytics_engine_datasets]]): the local runtime's binding keeps nothing. */
  analyticsEngineDatasets: WorkerOptions["analyticsEngineDatasets"];
}

/** wrangler.toml as wrangler reads it; wrangler is loaded only when wrangler.toml changed. */
export function workerConfig(): WorkerConfig {
  // The configuration names the pages' folder by its absolute path: an entry belongs to one
  // checkout of the project (two checkouts may share node_modules, and so this cache).
  const entry = cached(`config-${hashOf(CONFIG_INPUTS, ROOT)}`, (dir) => {
    const wrangler = createRequire(import.meta.url)("wrangler") as typeof import("wrangler");
    const configPath = path.join(ROOT, "wrangler.toml");
    const config = wrangler.unstable_readConfig({ config: configPath });
    const { workerOptions } = wrangler.unstable_getMiniflareWorkerOptions(configPath);
    const read: WorkerConfig = {
      vars: config.vars as Record<string, string>,
      compatibilityDate: config.compatibility_date as string,
      compatibilityFlags: config.compatibility_flags,
      queueProducers: config.queues.producers ?? [],
      queueConsumers: config.queues.consumers ?? [],
      assets: workerOptions.assets,
      durableObjects: workerOptions.durableObjects,
      analyticsEngineDatasets: workerOptions.analyticsEngineDatasets,
    };
    writeFileSync(path.join(dir, "config.json"), JSON.stringify(read));
  });
  return JSON.parse(readFileSync(path.join(entry, "config.json"), "utf8")) as WorkerConfig;
}
