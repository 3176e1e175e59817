// Where a load run sends its requests: the Worker on Miniflare in this process (the local
// stack), or a deployed Worker (or `npm start`) at a base URL.
import { ApiClient } from "../../dev/lib/api-client.ts";
import type { Stack } from "../../dev/stack/local-stack.ts";

export interface Target {
  /** Names the target in summaries and reports. */
  name: string;
  api: ApiClient;
  /**
   * The orders D1 holds for a sale. Only the local stack can read D1 directly; a deployed
   * Worker is checked through its reconciliation report alone.
   */
  settledOrders?(saleId: string): Promise<{ orderId: string; userId: string }[]>;
}

export function stackTarget(stack: Stack): Target {
  return { name: "local stack (Miniflare)", api: stack.api, settledOrders: (saleId) => stack.settledOrders(saleId) };
}

export function remoteTarget(baseUrl: string, adminToken: string, jwtSecret: string): Target {
  const base = baseUrl.replace(/\/+$/, "");
  return { name: base, api: new ApiClient({ fetch: (path, init) => fetch(`${base}${path}`, init), adminToken, jwtSecret }) };
}
