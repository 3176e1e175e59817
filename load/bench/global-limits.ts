// The global limits' price: GET /api/orders (a D1 read, no Redis of its own) on a stack with
// its global limits off, then on one with them on (per user and per address), for callers
// they admit and for callers they have blocked. Upstash round trips counted at the gateway,
// workerd's CPU from /proc. Each on a stack of its own, one after the other.
import { startStack } from "../../dev/stack/local-stack.ts";
import { measureOrderReads, type RouteCost } from "../runner/global-limits.ts";
import { fixed, formatTable } from "../runner/table.ts";

export interface GlobalLimitFigures {
  rows: (RouteCost & { case: string })[];
}

export async function benchGlobalLimits({ users = 50, perUser = 20 } = {}): Promise<GlobalLimitFigures> {
  const reads = { users, perUser, width: users };
  const off = await startStack({
    vars: { USER_RATE_LIMIT: "0", ORDER_READS_PER_USER_PER_MIN: "0", ORDER_READS_PER_IP_PER_MIN: "0" },
  });
  let without: RouteCost;
  try {
    await measureOrderReads(off, { ...reads, perUser: 2, tag: "warm" });
    without = await measureOrderReads(off, { ...reads, tag: "off" });
  } finally {
    await off.stop();
  }
  const on = await startStack({
    vars: { USER_RATE_LIMIT: "0", ORDER_READS_PER_USER_PER_MIN: String(perUser), ORDER_READS_PER_IP_PER_MIN: "1000000" },
  });
  try {
    await measureOrderReads(on, { ...reads, perUser: 2, tag: "warm" });
    const allowed = await measureOrderReads(on, { ...reads, tag: "on" });
    const blocked = await measureOrderReads(on, { ...reads, tag: "on" });
    return {
      rows: [
        { case: "no global limit", ...without },
        { case: "global limits, admitted", ...allowed },
        { case: "global limits, blocked", ...blocked },
      ],
    };
  } finally {
    await on.stop();
  }
}

export function printGlobalLimits(f: GlobalLimitFigures, log: (text: string) => void): void {
  log("\n13. Global limits (per user and per address) on GET /api/orders: round trips and workerd CPU per request");
  log(
    formatTable(
      f.rows.map((r) => ({
        case: r.case,
        requests: r.requests,
        "answered 200": r.admitted,
        "round trips/req": fixed(r.roundTrips / r.requests, 3),
        "workerd CPU ms/req": fixed(r.workerCpuMs / r.requests, 3),
        interfered: r.interfered ? "yes" : "",
      })),
    ),
  );
}
