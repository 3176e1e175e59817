// npm run generate: writes every file made from the code's own tables. A test fails when one
// is stale, so run this after changing a route, a schema, an error code or a setting:
// - public/openapi.json and the reference page public/docs.html (at /docs), from the routes'
//   docs and the zod schemas the Worker validates with;
// - public/assets/lib/order-event-types.js, the event types the console lists;
// - wrangler.toml's [vars] and docs/configuration.md's table, from src/shared/settings.ts.
import { writeFileSync } from "node:fs";
import { generatedFiles } from "./files.ts";

for (const { file, content } of generatedFiles()) {
  writeFileSync(file, content);
  console.log(`wrote ${file}`);
}
