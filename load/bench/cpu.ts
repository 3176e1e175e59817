// Server CPU per request: an accepted checkout and warm refusals next to GET /healthz, on the
// same Miniflare runtime and harness, in alternating rounds. workerd's CPU comes from /proc.
// Its own stack runs without a consumer on the orders queue: in production settlement is
// the consumer's invocation, billed apart, so the checkout's figure is its request alone
// (token, memo, the merged script call, the queue send).
import { startStack } from "../../dev/stack/local-stack.ts";
import { pinStack, stackProcesses } from "../runner/cpu.ts";
import { planCrowd, type Shot } from "../runner/crowd.ts";
import { alternatingRounds, type ContenderFigures } from "../runner/rounds.ts";
import { fixed, formatTable } from "../runner/table.ts";

/** Goals: CPU per request as a multiple of /healthz's. */
const CPU_GOALS = { accepted: 1.3, refusal: 1.1 } as const;

export interface CpuFigures {
  pinning: string;
  inFlight: number;
  rows: (ContenderFigures & { workerdVsHealthz: number; goal?: number })[];
}

export async function benchCpu({ perRound = 2_000, rounds = 3, inFlight = 50 } = {}): Promise<CpuFigures> {
  const stack = await startStack({ vars: { USER_RATE_LIMIT: "0" }, unsettled: true });
  try {
    const processes = stackProcesses(stack);
    const pinning = pinStack(processes);
    const { api } = stack;
    const warmup = 500;
    const total = warmup + rounds * perRound;
    const tag = Date.now().toString(36);
    const buyers = await planCrowd(api, total, 1, `cpu-buyer-${tag}-`);
    const open = await api.createSale({ stock: total, name: "cpu: accepted" });

    // Sold out: its one unit taken, so this isolate knows and refuses at once.
    const soldOut = await api.createSale({ stock: 1, name: "cpu: sold out" });
    const [first] = await planCrowd(api, 1, 1, `cpu-first-${tag}-`);
    await api.checkout(soldOut.id, (first as Shot).token);
    const latecomers = await planCrowd(api, total, 1, `cpu-late-${tag}-`);

    // A repeat buyer: one user who holds the unit, clicking again and again.
    const repeat = await api.createSale({ stock: 10, name: "cpu: repeat buyer" });
    const [holder] = await planCrowd(api, 1, 1, `cpu-holder-${tag}-`);
    await api.checkout(repeat.id, (holder as Shot).token);

    const figures = await alternatingRounds(
      [
        { name: "GET /healthz", send: () => api.healthz(), expect: "OK", shots: buyers },
        { name: "checkout, accepted", send: (s) => api.checkout(open.id, s.token), expect: "ACCEPTED", shots: buyers },
        {
          name: "checkout, sold out (warm)",
          send: (s) => api.checkout(soldOut.id, s.token),
          expect: "SOLD_OUT",
          shots: latecomers,
        },
        {
          name: "checkout, repeat buyer (warm)",
          send: () => api.checkout(repeat.id, (holder as Shot).token),
          expect: "ALREADY_PURCHASED",
          shots: buyers,
        },
      ],
      { rounds, perRound, warmup, inFlight, processes },
    );
    const base = (figures[0] as ContenderFigures).cpuMsPerRequest.workerd as number;
    return {
      pinning,
      inFlight,
      rows: figures.map((f, i) => ({
        ...f,
        workerdVsHealthz: (f.cpuMsPerRequest.workerd as number) / base,
        goal: i === 0 ? undefined : i === 1 ? CPU_GOALS.accepted : CPU_GOALS.refusal,
      })),
    };
  } finally {
    await stack.stop();
  }
}

export function printCpu(f: CpuFigures, log: (text: string) => void): void {
  log(`\n2b. Server CPU per request (workerd, from /proc), ${f.inFlight} in flight, alternating rounds; ${f.pinning}`);
  log(
    formatTable(
      f.rows.map((r) => ({
        request: r.name,
        requests: r.requests,
        "req/s": fixed(r.reqPerSec, 0),
        "p50 ms": fixed(r.p50Ms),
        "workerd CPU ms/req": fixed(r.cpuMsPerRequest.workerd as number, 3),
        "x healthz": fixed(r.workerdVsHealthz, 2),
        goal: r.goal === undefined ? "" : `<= ${r.goal}x ${r.workerdVsHealthz <= r.goal ? "met" : "NOT met"}`,
        "gateway+redis ms/req": fixed((r.cpuMsPerRequest.gateway as number) + (r.cpuMsPerRequest.redis as number), 3),
        "load generator ms/req": fixed(r.cpuMsPerRequest.harness as number, 3),
        "others' share": `${fixed(r.othersShare * 100, 0)}%${r.interfered ? " INTERFERED" : ""}`,
      })),
    ),
  );
}
