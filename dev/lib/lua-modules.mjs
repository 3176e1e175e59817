// Lets Node import the Lua scripts as text, as wrangler's Text rule does for the Worker
// (wrangler.toml `rules`): `tsx --import ./dev/lib/lua-modules.mjs ...`. Plain JavaScript:
// it runs in Node's module-hooks thread, before any TypeScript loader.
import { register } from "node:module";

register(
  `data:text/javascript,${encodeURIComponent(`
import { readFile } from "node:fs/promises";
export async function load(url, context, nextLoad) {
  if (!url.endsWith(".lua")) return nextLoad(url, context);
  const source = await readFile(new URL(url), "utf8");
  return { format: "module", source: "export default " + JSON.stringify(source) + ";", shortCircuit: true };
}`)}`,
);
