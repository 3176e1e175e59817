// Where a request's CPU goes inside the isolate: a V8 CPU profile of the Worker (through
// workerd's inspector) during GET /healthz, accepted checkouts (their settlement included:
// the consumer runs in the same isolate) and warm sold-out refusals, in production's mix as
// section "cpu" sends it (a new token and address per request, the per-caller limits on),
// summed by module of the Worker's source. What the isolate does not run (workerd's HTTP,
// Miniflare's entry and assets router, local D1 and Queues) shows only in section "cpu"'s /proc figures.
import { Redis as IORedis } from "ioredis";
import type { Answer } from "../../dev/lib/api-client.ts";
import { freePort } from "../../dev/lib/net.ts";
import { outboxSize } from "../../dev/lib/sale-buckets.ts";
import { eventually } from "../../dev/lib/wait.ts";
import { startStack } from "../../dev/stack/local-stack.ts";
import { drive, planCrowd, type Shot } from "../runner/crowd.ts";
import { productionLimits, productionMix } from "../runner/production-mix.ts";
import { type ProfileSummary, profileWorker } from "../runner/profile.ts";
import { fixed, formatTable } from "../runner/table.ts";

export interface ProfileFigures {
  requests: number;
  inFlight: number;
  profiles: { request: string; profile: ProfileSummary }[];
}

export async function benchProfile({ requests = 3_000, inFlight = 50 } = {}): Promise<ProfileFigures> {
  const port = await freePort();
  const stack = await startStack({ vars: productionLimits(), inspectorPort: port });
  const redis = new IORedis(stack.redis.url);
  try {
    const { api } = stack;
    const tag = Date.now().toString(36);
    const buyers = await planCrowd(api, 2 * requests, 1, `profile-${tag}-`);
    const open = await api.createSale({ stock: 2 * requests, name: "profile: accepted" });
    const soldOut = await api.createSale({ stock: 1, name: "profile: sold out" });
    await api.checkout(soldOut.id, (buyers[0] as Shot).token);
    const mix = productionMix(api);
    // The accepted orders settled: the consumer's work is the checkout's too.
    const settled = () =>
      eventually("the profiled orders to settle", async () => (await outboxSize(redis, open.id)) === 0, 120_000);
    const kinds: [string, (shot: Shot) => Promise<Answer>, () => Promise<unknown>][] = [
      ["GET /healthz", mix.healthz, async () => undefined],
      ["checkout, accepted, with its settlement", mix.checkout(open.id), settled],
      ["checkout, sold out (warm)", mix.checkout(soldOut.id), async () => undefined],
    ];
    const profiles = [];
    for (const [request, send, after] of kinds) {
      // Warm first (JIT, the sale's memo), then profile a fresh slice of buyers.
      await drive(buyers.slice(0, 500), send, { concurrency: inFlight });
      await after();
      const slice = buyers.slice(requests, 2 * requests);
      const profile = await profileWorker(port, stack.worker.bundlePath, slice.length, async () => {
        await drive(slice, send, { concurrency: inFlight });
        await after();
      });
      profiles.push({ request, profile });
    }
    return { requests, inFlight, profiles };
  } finally {
    redis.disconnect();
    await stack.stop();
  }
}

export function printProfile(f: ProfileFigures, log: (text: string) => void): void {
  log(
    `\n2c. Where the isolate's CPU goes (V8 CPU profile, unminified bundle, ${f.requests} requests each, ${f.inFlight} in flight): self time per request by module`,
  );
  for (const { request, profile } of f.profiles) {
    log(`\n${request}: ${fixed(profile.busyMs, 3)} ms sampled in the isolate per request`);
    log(
      formatTable(
        profile.byModule
          .slice(0, 12)
          .map((l) => ({ module: l.name, "ms/req": fixed(l.selfMs, 4), share: `${fixed(l.share * 100, 1)}%` })),
      ),
    );
    log(
      formatTable(
        profile.byFunction
          .slice(0, 12)
          .map((l) => ({ function: l.name, "ms/req": fixed(l.selfMs, 4), share: `${fixed(l.share * 100, 1)}%` })),
      ),
    );
  }
}
