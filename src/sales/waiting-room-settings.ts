import { toHex } from "../shared/hex";
import { DEFAULT_QUEUE } from "../shared/limits";
import type { QueueSettings } from "../shared/requests";
import { seedCommitment } from "../shared/waiting-room-draw";
import type { WaitingRoomSettings } from "./sale";

/**
 * The waiting room a create or an edit asks for: `settings` over the sale's current one (or
 * the defaults), with a random 32-byte seed and its commitment when the sale has none yet.
 * The seed is made once and never changes, so a commitment once published stays true.
 */
export async function waitingRoomFrom(
  settings: QueueSettings | undefined,
  current?: WaitingRoomSettings,
): Promise<WaitingRoomSettings> {
  const base = current ?? { ...DEFAULT_QUEUE, seed: null, seedCommitment: null };
  const seed = base.seed ?? toHex(crypto.getRandomValues(new Uint8Array(32)));
  return {
    mode: settings?.mode ?? base.mode,
    prequeueSec: settings?.prequeueSec ?? base.prequeueSec,
    admitPerSec: settings?.admitPerSec ?? base.admitPerSec,
    passTtlSec: settings?.passTtlSec ?? base.passTtlSec,
    seed,
    seedCommitment: base.seed ? base.seedCommitment : await seedCommitment(seed),
  };
}
