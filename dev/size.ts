// npm run size: what the Worker's script is made of, per dependency and per folder of src/
// (`-- --files`: per file). It bundles as `npm run build` does (wrangler deploy --dry-run:
// workerd's conditions, the Lua scripts as Text modules beside the script) and reads the
// script's source map: each stretch of minified code belongs to the source its mapping names.
// Per group it prints the minified bytes and what the gzipped script would lose without them
// (the script gzipped with that group's stretches cut out, subtracted from the whole), the
// measure that says what removing or deferring a group would pay; the savings overlap a little
// (gzip finds repeats across groups), so they add up to less than the whole.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { decode } from "@jridgewell/sourcemap-codec";
import { ROOT } from "./lib/project.ts";
import { BUDGET_KIB, bundleWorker, gzippedKiB } from "./lib/worker-bundle.ts";

const DIST = path.join(ROOT, "dist");
const byFile = process.argv.includes("--files");

/** A stretch of the script and the source it was minified from (undefined: glue no source claims). */
interface Stretch {
  start: number;
  end: number;
  source: string | undefined;
}

/** The script cut into stretches by its source map (columns are UTF-16 offsets, as in `code`). */
function stretchesOf(code: string, map: { sources: string[]; sourceRoot?: string; mappings: string }): Stretch[] {
  const sources = map.sources.map((source) => path.relative(ROOT, path.resolve(map.sourceRoot ?? DIST, source)));
  const stretches: Stretch[] = [];
  let lineStart = 0;
  for (const segments of decode(map.mappings)) {
    const lineEnd = code.indexOf("\n", lineStart) === -1 ? code.length : code.indexOf("\n", lineStart) + 1;
    let at = lineStart;
    for (const [column, source] of segments) {
      const start = lineStart + column;
      if (start > at) stretches.push({ start: at, end: start, source: stretches.at(-1)?.source });
      stretches.push({ start, end: start, source: source === undefined ? undefined : sources[source] });
      at = start;
    }
    // Each mapping runs to the next one; the last of a line to the line's end.
    for (let i = stretches.length - 1; i >= 0 && stretches[i]?.end === stretches[i]?.start; i--) {
      const next = stretches[i + 1];
      (stretches[i] as Stretch).end = next ? next.start : lineEnd;
    }
    // A line without mappings is the middle of a multi-line string: its source's too.
    if (lineEnd > at && segments.length === 0) stretches.push({ start: at, end: lineEnd, source: stretches.at(-1)?.source });
    lineStart = lineEnd;
  }
  return stretches.filter((s) => s.end > s.start);
}

/** A dependency by its package name, the Worker's own code by its folder of src/. */
function groupOf(source: string | undefined): string {
  if (source === undefined) return "(bundler glue)";
  if (byFile) return source;
  const inPackage = source.split("node_modules/").at(-1) as string;
  if (inPackage !== source) {
    const [scope, name] = inPackage.split("/");
    return scope?.startsWith("@") ? `${scope}/${name}` : (scope as string);
  }
  const parts = source.split("/");
  return parts.length > 2 ? `${parts.slice(0, 2).join("/")}/` : source;
}

bundleWorker(DIST, { quiet: true });
const code = readFileSync(path.join(DIST, "index.js"), "utf8");
const stretches = stretchesOf(code, JSON.parse(readFileSync(path.join(DIST, "index.js.map"), "utf8")));
const whole = gzippedKiB(code);

const groups = new Map<string, Stretch[]>();
for (const stretch of stretches) {
  const group = groupOf(stretch.source);
  groups.set(group, [...(groups.get(group) ?? []), stretch]);
}
const rows = [...groups].map(([group, own]) => {
  const ownSet = new Set(own);
  const rest = stretches.filter((s) => !ownSet.has(s)).map((s) => code.slice(s.start, s.end));
  const bytes = Buffer.byteLength(own.map((s) => code.slice(s.start, s.end)).join(""));
  return { group, bytes, saved: whole - gzippedKiB(rest.join("")) };
});
rows.sort((a, b) => b.saved - a.saved);

const kib = (n: number) => n.toFixed(1).padStart(8);
console.log(
  `${"what".padEnd(48)} ${"minified".padStart(8)} ${"gzipped".padStart(8)}  KiB (gzipped: what the script loses without it)`,
);
for (const { group, bytes, saved } of rows) console.log(`${group.padEnd(48)} ${kib(bytes / 1024)} ${kib(saved)}`);
console.log(
  `${"the script, dist/index.js".padEnd(48)} ${kib(Buffer.byteLength(code) / 1024)} ${kib(whole)}  (budget ${BUDGET_KIB} KiB gzipped)`,
);

const textModules = readdirSync(DIST).filter((name) => name.endsWith(".lua"));
const textBytes = textModules.reduce((n, name) => n + statSync(path.join(DIST, name)).size, 0);
console.log(
  `beside it, not in the budget: ${textModules.length} Lua scripts as Text modules, ${(textBytes / 1024).toFixed(1)} KiB`,
);
