// npm run token -- <userId> [--ttl seconds]: prints a user token the local stack accepts,
// signed with JWT_SECRET, or with the secret `npm start` keeps in its state directory.
import { parseArgs } from "node:util";
import { ROOT } from "./lib/project.ts";
import { mintUserToken } from "./lib/user-tokens.ts";
import { localSecrets, stateDir } from "./stack/local-secrets.ts";

const { positionals, values } = parseArgs({ allowPositionals: true, options: { ttl: { type: "string", default: "3600" } } });
const userId = positionals[0];
if (!userId) {
  console.error("usage: npm run token -- <userId> [--ttl seconds]");
  process.exit(2);
}
console.log(await mintUserToken(userId, localSecrets(stateDir(ROOT)).JWT_SECRET, Number(values.ttl)));
