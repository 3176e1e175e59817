// npm run openapi: writes the API's documentation files, served as static assets:
// public/openapi.json and the reference page public/docs.html (at /docs), and the order event
// types the console lists (public/assets/lib/order-event-types.js). A test fails when
// they are stale, so run this after changing a route, a schema or the route table.
import { writeFileSync } from "node:fs";
import { apiDocFiles } from "./files.ts";

for (const { file, content } of apiDocFiles()) {
  writeFileSync(file, content);
  console.log(`wrote ${file}`);
}
