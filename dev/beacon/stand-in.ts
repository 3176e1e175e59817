// A local stand-in for a public randomness beacon (drand's HTTP API), for the local stack
// (`npm start`) and the tests, which cannot reach drand. Each round is published at its time
// (genesis + period x (round - 1)), never before, as drand's are: a draw that names a future
// round cannot know its value until then, and neither can the shop. Its randomness is the
// SHA-256 of the round's number with a secret salt (made when it starts, or the one a
// restarting stack kept: dev/stack/local-beacon.ts), so nobody can work a round out before
// it is published. Unlike drand's it is signed by nobody: it
// stands in for the shape of the API, not for its trust.
import { createHash, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface BeaconStandIn {
  /** What a sale names as its beacon's url (GET <url>/public/<round>, GET <url>/info). */
  url: string;
  /** The round published at `atMs` (the first one at or after it). */
  roundAt(atMs: number): number;
  stop(): Promise<void>;
}

/** What makes a stand-in's rounds: kept by a stack that restarts on the same state, so its rounds stay what they were. */
export interface BeaconRounds {
  /** Round 1's time (s since the epoch). */
  genesisSec: number;
  /** Hex: the secret the rounds' randomness comes from. */
  salt: string;
}

/** Rounds starting now, from a fresh salt. */
export const freshRounds = (): BeaconRounds => ({
  genesisSec: Math.floor(Date.now() / 1000),
  salt: randomBytes(32).toString("hex"),
});

/**
 * Starts the stand-in on a free loopback port (or `port`), rounds every `periodSec` seconds
 * from `rounds.genesisSec` (fresh rounds from now unless given).
 */
export async function startBeacon({ port = 0, periodSec = 1, rounds = freshRounds() } = {}): Promise<BeaconStandIn> {
  const { genesisSec } = rounds;
  const salt = Buffer.from(rounds.salt, "hex");
  const roundTimeMs = (round: number) => (genesisSec + periodSec * (round - 1)) * 1000;
  const randomness = (round: number) => createHash("sha256").update(salt).update(String(round)).digest("hex");
  const server = createServer((req, res) => {
    const json = (status: number, body: unknown) =>
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    const path = req.url?.split("?")[0] ?? "";
    if (req.method !== "GET") return json(405, { error: "GET only" });
    if (path === "/info") return json(200, { period: periodSec, genesis_time: genesisSec });
    const match = /^\/public\/(\d{1,15})$/.exec(path);
    const round = match ? Number(match[1]) : 0;
    if (round < 1) return json(404, { error: "no such round" });
    // drand answers a round not out yet with 425 Too Early.
    if (Date.now() < roundTimeMs(round)) return json(425, { error: "this round is not out yet" });
    return json(200, { round, randomness: randomness(round) });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}`,
    roundAt: (atMs) => Math.max(1, Math.ceil((atMs / 1000 - genesisSec) / periodSec) + 1),
    stop: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
