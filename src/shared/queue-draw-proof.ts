// A random sale's pre-queue as it is published once the sale is over (docs/api.md, "Verifying
// a draw"): each place with its holder's draw key, as the leaves of an RFC 6962 Merkle tree in
// place order (src/shared/draw-proof.ts builds the tree). No user id is in a leaf: a holder finds
// their place from their own user id and the revealed seed (src/shared/waiting-room-draw.ts).
// The Worker publishes with these functions and `npm run verify-queue` recomputes with them.
import { hashLeaf } from "./draw-proof";
import { hexBytes } from "./hex";

/** A draw key as published: HMAC-SHA256's 32 bytes, lowercase hex. */
export const DRAW_KEY_PATTERN = /^[0-9a-f]{64}$/;

/** A place's leaf: the place (4 bytes, unsigned, big-endian) | the draw key (32 bytes). */
export function placeLeafBytes(place: number, drawKeyHex: string): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(36);
  new DataView(bytes.buffer).setUint32(0, place);
  bytes.set(hexBytes(drawKeyHex), 4);
  return bytes;
}

/** A place's RFC 6962 leaf hash, hex. */
export const placeLeafHash = (place: number, drawKeyHex: string): Promise<string> => hashLeaf(placeLeafBytes(place, drawKeyHex));
