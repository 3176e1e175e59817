// Requests as production sends them to a Worker in a flash sale: every one from a buyer whose
// token the isolate has never seen, from an address of its own, past the per-caller limits
// wrangler.toml sets. The CPU benchmark (section 2b) and its profile (2c) send this mix.
import { type Answer, type ApiClient, answerOf } from "../../dev/lib/api-client.ts";
import { workerConfig } from "../../dev/stack/wrangler-cache.ts";
import type { Shot } from "./crowd.ts";

/** The per-caller limits as wrangler.toml sets them (requests/s per isolate), as a stack's vars. */
export function productionLimits(): { IP_RATE_LIMIT: string; USER_RATE_LIMIT: string } {
  const { IP_RATE_LIMIT, USER_RATE_LIMIT } = workerConfig().vars as Record<string, string>;
  return { IP_RATE_LIMIT: IP_RATE_LIMIT as string, USER_RATE_LIMIT: USER_RATE_LIMIT as string };
}

/** A request's caller in the mix: its shot's token and a fresh address (10.x.y.z, never twice from one sender). */
export function callerHeaders(): (shot: Shot) => Record<string, string> {
  let sent = 0;
  return (shot) => {
    const n = sent++;
    return { Authorization: `Bearer ${shot.token}`, "CF-Connecting-IP": `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}` };
  };
}

/** Senders of the mix: each request carries its shot's token and a fresh address. */
export function productionMix(api: ApiClient) {
  const headers = callerHeaders();
  return {
    /** GET /healthz, sent as the checkouts are. */
    healthz: async (shot: Shot): Promise<Answer> => {
      const res = await api.fetch("/healthz", { headers: headers(shot) });
      await res.arrayBuffer();
      return { status: res.status, code: res.ok ? "OK" : `HTTP_${res.status}` };
    },
    /** A checkout of one unit, without a body. */
    checkout:
      (saleId: string) =>
      async (shot: Shot): Promise<Answer> =>
        answerOf(await api.fetch(`/api/sales/${saleId}/checkout`, { method: "POST", headers: headers(shot) })),
  };
}
