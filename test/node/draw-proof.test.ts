// The draw's proofs are RFC 6962's: the roots of Certificate Transparency's reference vectors,
// audit paths that verify for every leaf of every small tree (and fail for any other), a root
// built a chunk at a time equal to the root built at once, and the selection's rule.
import { createHash, createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  auditPath,
  drawKeyOf,
  entrantHash,
  leafHash,
  merkleRoot,
  Selection,
  shuffler,
  tierOf,
  treeHash,
  verifyInclusion,
} from "../../src/shared/draw-proof.ts";
import { hexBytes, toHex } from "../../src/shared/hex.ts";

const sha256 = (...parts: Buffer[]) => createHash("sha256").update(Buffer.concat(parts)).digest();
/** Certificate Transparency's reference leaves (its tree tests), and the root of each prefix. */
const VECTOR_LEAVES = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"];
const VECTOR_ROOTS = [
  "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
  "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
  "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
  "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
  "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
  "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
  "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
  "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];
const vectorHashes = VECTOR_LEAVES.map((data) => sha256(Buffer.from([0]), Buffer.from(data, "hex")).toString("hex"));

/** n distinct leaf hashes, as a draw's leaves would give them. */
const someLeafHashes = (n: number) =>
  Promise.all(
    Array.from({ length: n }, (_, i) =>
      leafHash({ entrant: toHex(sha256(Buffer.from(`e${i}`))), variant: "eu-42", quantity: 1 }),
    ),
  );

describe("the draw's Merkle tree", () => {
  it("has Certificate Transparency's roots, and SHA-256 of nothing when empty", async () => {
    for (let n = 1; n <= VECTOR_ROOTS.length; n++) expect(await merkleRoot(vectorHashes.slice(0, n))).toBe(VECTOR_ROOTS[n - 1]);
    expect(await merkleRoot([])).toBe(sha256().toString("hex"));
  });

  it("proves every leaf of every tree up to 40 leaves, and nothing else", async () => {
    const all = await someLeafHashes(40);
    for (let size = 1; size <= all.length; size++) {
      const hashes = all.slice(0, size);
      const root = await merkleRoot(hashes);
      for (let m = 0; m < size; m++) {
        const path = await auditPath(m, hashes.map(hexBytes));
        expect(await verifyInclusion(hashes[m] as string, m, size, path, root), `${m} of ${size}`).toBe(true);
        expect(await verifyInclusion(hashes[(m + 1) % size] as string, m, size, path, root)).toBe(size === 1);
        if (size > 1) expect(await verifyInclusion(hashes[m] as string, (m + 1) % size, size, path, root)).toBe(false);
      }
    }
  });

  it("is the same built from aligned chunks' roots as built at once", async () => {
    const all = await someLeafHashes(37);
    const chunk = 8;
    const roots: Uint8Array[] = [];
    for (let i = 0; i < all.length; i += chunk) roots.push(await treeHash(all.slice(i, i + chunk).map(hexBytes)));
    expect(toHex(await treeHash(roots))).toBe(await merkleRoot(all));
    // An audit path from the chunk's own path and the path among the chunks' roots.
    const m = 29;
    const within = await auditPath(m % chunk, all.slice(24, 32).map(hexBytes));
    const among = await auditPath(Math.floor(m / chunk), roots);
    expect(await verifyInclusion(all[m] as string, m, all.length, [...within, ...among], await merkleRoot(all))).toBe(true);
  });
});

describe("the draw's shuffle and selection", () => {
  it("keys the shuffle by the seed and the beacon together", async () => {
    const seed = "11".repeat(32);
    const key = await drawKeyOf(seed, "22".repeat(32));
    expect(key).toBe(sha256(Buffer.from(seed, "hex"), Buffer.from("22".repeat(32), "hex")).toString("hex"));
    expect(await drawKeyOf(seed, null)).toBe(sha256(Buffer.from(seed, "hex")).toString("hex"));
    const leaf = await leafHash({ entrant: await entrantHash("ada", "33".repeat(16)), variant: "s", quantity: 2 });
    const shuffleKey = await (await shuffler(key))(leaf);
    expect(shuffleKey).toBe(createHmac("sha256", Buffer.from(key, "hex")).update(Buffer.from(leaf, "hex")).digest("hex"));
    expect(shuffleKey).not.toBe(await (await shuffler(await drawKeyOf(seed, null)))(leaf));
  });

  it("selects while the quantity fits, waitlists as many entries as the variant has units, and not the rest", () => {
    const selection = new Selection(new Map([["s", 3]]));
    expect(
      ["s", "s", "s", "s", "s", "s", "s"].map((variant, i) =>
        selection.next({ variant, quantity: i === 0 ? 2 : i === 1 ? 2 : 1 }),
      ),
    ).toEqual(["selected", "waitlisted", "selected", "waitlisted", "waitlisted", "not_selected", "not_selected"]);
    const resumed = Selection.resume(new Map([["s", 3]]), selection.state);
    expect(resumed.next({ variant: "s", quantity: 1 })).toBe("not_selected");
    expect(new Selection(new Map()).next({ variant: "x", quantity: 1 })).toBe("not_selected");
  });

  it("names a leaf's lane after its quantity only in a sale with lanes, the public draw as an empty name", async () => {
    const entrant = "ab".repeat(32);
    const plain = Buffer.concat([Buffer.from(entrant, "hex"), Buffer.from([1]), Buffer.from("s"), Buffer.from([2])]);
    expect(await leafHash({ entrant, variant: "s", quantity: 2 })).toBe(sha256(Buffer.from([0]), plain).toString("hex"));
    const laned = Buffer.concat([plain, Buffer.from([7]), Buffer.from("members")]);
    expect(await leafHash({ entrant, variant: "s", quantity: 2, lane: "members" })).toBe(
      sha256(Buffer.from([0]), laned).toString("hex"),
    );
    const publicDraw = Buffer.concat([plain, Buffer.from([0])]);
    expect(await leafHash({ entrant, variant: "s", quantity: 2, lane: "" })).toBe(
      sha256(Buffer.from([0]), publicDraw).toString("hex"),
    );
  });

  it("draws each lane from its allotment and what the capped lanes before it left, then the public draw from the rest", () => {
    const lanes = [
      { name: "members", stock: 2, variants: { s: 1 } },
      { name: "fans", stock: 2, variants: null },
      { name: "friends", stock: null, variants: null },
    ];
    expect(["members", "fans", "friends", "", "nobody"].map((lane) => tierOf(lanes, lane))).toEqual([0, 1, 2, 3, 3]);
    const selection = new Selection(
      new Map([
        ["s", 4],
        ["m", 4],
      ]),
      lanes,
    );
    const next = (lane: string, variant: string) => selection.next({ lane, variant, quantity: 1 });
    // Members: one S of their two units, so the second S waits on the members' own waitlist.
    expect([next("members", "s"), next("members", "s"), next("members", "m")]).toEqual(["selected", "waitlisted", "selected"]);
    // Fans: their two, and nothing members left (they took both).
    expect([next("fans", "m"), next("fans", "s"), next("fans", "m")]).toEqual(["selected", "selected", "waitlisted"]);
    // Friends have no allotment: what the sale has left (S 2, M 2).
    expect([next("friends", "m"), next("friends", "m")]).toEqual(["selected", "selected"]);
    // The public draw: the rest, S 2 and M 0.
    expect([next("", "s"), next("", "s"), next("", "s"), next("", "m")]).toEqual([
      "selected",
      "selected",
      "waitlisted",
      "waitlisted",
    ]);
    // Resumed from its state, it goes on where it stood.
    const resumed = Selection.resume(
      new Map([
        ["s", 4],
        ["m", 4],
      ]),
      selection.state,
      lanes,
    );
    expect(resumed.state).toEqual(selection.state);
    expect(resumed.next({ lane: "", variant: "s", quantity: 1 })).toBe("waitlisted");
  });

  it("rolls a lane's unselected allotment to the next capped lane", () => {
    const selection = new Selection(new Map([["default", 10]]), [
      { name: "members", stock: 3, variants: null },
      { name: "fans", stock: 1, variants: null },
    ]);
    expect(selection.next({ lane: "members", variant: "default", quantity: 1 })).toBe("selected");
    // Members left two, so fans may take three.
    expect(["fans", "fans", "fans", "fans"].map((lane) => selection.next({ lane, variant: "default", quantity: 1 }))).toEqual([
      "selected",
      "selected",
      "selected",
      "waitlisted",
    ]);
  });
});
