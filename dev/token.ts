// npm run token -- <userId> [--ttl seconds]: prints a user token signed with JWT_SECRET
// (or the dev default that `npm start` uses).
import { parseArgs } from "node:util";
import { DEV_SECRETS, mintUserToken } from "./tokens.ts";

const { positionals, values } = parseArgs({ allowPositionals: true, options: { ttl: { type: "string", default: "3600" } } });
const userId = positionals[0];
if (!userId) {
  console.error("usage: npm run token -- <userId> [--ttl seconds]");
  process.exit(2);
}
console.log(await mintUserToken(userId, process.env.JWT_SECRET ?? DEV_SECRETS.JWT_SECRET, Number(values.ttl)));
