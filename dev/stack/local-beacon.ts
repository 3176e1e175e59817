// npm start's randomness beacon: the local stand-in (dev/beacon/stand-in.ts) on a port of its
// own (BEACON_PORT), its rounds kept in the state directory. A draw sale keeps its beacon's URL
// and round; its draw reads the round after the close, maybe after a restart, and
// `npm run verify-draw` reads it again later: the URL, each round's time and its randomness
// must be what they were before the restart.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { type BeaconRounds, type BeaconStandIn, freshRounds, startBeacon } from "../beacon/stand-in.ts";

/** A round every 3 s, as drand's quicknet publishes them. */
const PERIOD_SEC = 3;

/** The stand-in on `port`, with the rounds kept in `stateDir`/beacon.json (made there the first time). */
export function localBeacon(stateDir: string, port: number): Promise<BeaconStandIn> {
  const file = path.join(stateDir, "beacon.json");
  let rounds: BeaconRounds;
  if (existsSync(file)) {
    rounds = JSON.parse(readFileSync(file, "utf8")) as BeaconRounds;
  } else {
    rounds = freshRounds();
    writeFileSync(file, `${JSON.stringify(rounds, null, 2)}\n`, { mode: 0o600 });
  }
  return startBeacon({ port, periodSec: PERIOD_SEC, rounds });
}
