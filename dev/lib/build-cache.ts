// Files made once per content and kept under node_modules/.cache/flash-sale, each named by a
// hash of what it is made from: what only wrangler makes for the local Worker
// (dev/stack/wrangler-cache.ts) and the gateway as one JavaScript file (dev/gateway/process.ts).
// Any change to the inputs makes a new entry; `npm ci` clears them.
import { createHash, randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { ROOT } from "./project.ts";

const CACHE = path.join(ROOT, "node_modules", ".cache", "flash-sale");

/**
 * A short hash of the files under `inputs` (paths relative to the project), names and contents,
 * and of `also` (what else the entry depends on).
 */
export function hashOf(inputs: string[], also = ""): string {
  const hash = createHash("sha256").update(also).update("\0");
  const visit = (file: string) => {
    if (statSync(file).isDirectory()) {
      for (const name of readdirSync(file).sort()) visit(path.join(file, name));
    } else {
      hash.update(path.relative(ROOT, file)).update("\0").update(readFileSync(file)).update("\0");
    }
  };
  for (const input of inputs) visit(path.join(ROOT, input));
  return hash.digest("hex").slice(0, 16);
}

/** Where a cached file called `name` lives (for entries made by async work, which `cached` cannot wait for). */
export function cacheFile(name: string): string {
  mkdirSync(CACHE, { recursive: true });
  return path.join(CACHE, name);
}

/**
 * The cache entry `name`, made by `make(dir)` the first time. Made in a directory of its own
 * and renamed into place, so two processes making it at once never see half an entry: one
 * rename wins, and the other uses the winner's.
 */
export function cached(name: string, make: (dir: string) => void): string {
  const entry = path.join(CACHE, name);
  if (existsSync(entry)) return entry;
  const scratch = path.join(CACHE, `.${name}-${randomUUID()}`);
  mkdirSync(scratch, { recursive: true });
  try {
    make(scratch);
    renameSync(scratch, entry);
  } catch (err) {
    if (!existsSync(entry)) throw err;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return entry;
}
