import type { D1Migration } from "cloudflare:test";

declare global {
  namespace Cloudflare {
    interface Env {
      TEST_MIGRATIONS: D1Migration[];
      /** A gateway to another database of the suite's redis-server, for a test that loses shared keys. */
      TEST_SCRATCH_REDIS_URL: string;
      /** The test identity provider's private keys (test/setup/identity-provider.ts), each with its kid and alg. */
      TEST_SIGNING_KEYS: (JsonWebKey & { kid: string; alg: "RS256" | "ES256" })[];
      /** The local beacon stand-in (dev/beacon/stand-in.ts) draws name. */
      TEST_BEACON_URL: string;
    }
  }
}
