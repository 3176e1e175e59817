// The Worker's FF1 over Web Crypto (src/shared/ff1.ts) against NIST's FF1 sample vectors and
// against @noble/ciphers' FF1 (which the public ids were made with before, and the tools still
// use: dev/lib/order-ids.ts), so every public order id stays exactly the one it was.
import { FF1 } from "@noble/ciphers/ff1.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { orderIdCipher as toolsOrderIds } from "../../dev/lib/order-ids.ts";
import { ff1 } from "../../src/shared/ff1.ts";
import { ORDER_ID_RADIX, orderIdCipher, PUBLIC_ORDER_ID_FLOOR } from "../../src/shared/public-order-id.ts";

const bytes = (hex: string) => Uint8Array.from(hex.match(/../g) ?? [], (pair) => Number.parseInt(pair, 16));
const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";
const digits = (text: string) => [...text].map((c) => ALPHABET.indexOf(c));
const text = (numerals: number[]) => numerals.map((d) => ALPHABET[d]).join("");

const AES128 = "2B7E151628AED2A6ABF7158809CF4F3C";
const AES192 = `${AES128}EF4359D8D580AA4F`;
const AES256 = `${AES192}7F036D6F04FC6A94`;
const TWEAK_10 = "39383736353433323130";
const TWEAK_36 = "3737373770717273373737";

// NIST's FF1 samples (Cryptographic Standards and Guidelines, examples with intermediate values, FF1samples.pdf).
const SAMPLES = [
  { sample: 1, key: AES128, radix: 10, tweak: "", plain: "0123456789", cipher: "2433477484" },
  { sample: 2, key: AES128, radix: 10, tweak: TWEAK_10, plain: "0123456789", cipher: "6124200773" },
  { sample: 3, key: AES128, radix: 36, tweak: TWEAK_36, plain: "0123456789abcdefghi", cipher: "a9tv40mll9kdu509eum" },
  { sample: 4, key: AES192, radix: 10, tweak: "", plain: "0123456789", cipher: "2830668132" },
  { sample: 5, key: AES192, radix: 10, tweak: TWEAK_10, plain: "0123456789", cipher: "2496655549" },
  { sample: 6, key: AES192, radix: 36, tweak: TWEAK_36, plain: "0123456789abcdefghi", cipher: "xbj3kv35jrawxv32ysr" },
  { sample: 7, key: AES256, radix: 10, tweak: "", plain: "0123456789", cipher: "6657667009" },
  { sample: 8, key: AES256, radix: 10, tweak: TWEAK_10, plain: "0123456789", cipher: "1001623463" },
  { sample: 9, key: AES256, radix: 36, tweak: TWEAK_36, plain: "0123456789abcdefghi", cipher: "xs8a0azh2avyalyzuwd" },
];

describe("FF1 over Web Crypto", () => {
  it.each(SAMPLES)("NIST sample $sample: enciphers and deciphers as the standard's example", async (s) => {
    const cipher = ff1(s.radix, bytes(s.key), bytes(s.tweak));
    expect(text(await cipher.encrypt(digits(s.plain)))).toBe(s.cipher);
    expect(text(await cipher.decrypt(digits(s.cipher)))).toBe(s.plain);
  });

  it("enciphers the order ids' digits as @noble/ciphers' FF1 does, and deciphers them back, on thousands of random ones", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.array(fc.array(fc.integer({ min: 0, max: ORDER_ID_RADIX - 1 }), { minLength: 7, maxLength: 7 }), {
          minLength: 50,
          maxLength: 50,
        }),
        async (key, numerals) => {
          const ours = ff1(ORDER_ID_RADIX, Uint8Array.from(key));
          const noble = FF1(ORDER_ID_RADIX, key);
          for (const x of numerals) {
            const enciphered = await ours.encrypt(x);
            expect(enciphered).toEqual(noble.encrypt(x));
            expect(await ours.decrypt(enciphered)).toEqual(x);
            expect(await ours.decrypt(x)).toEqual(noble.decrypt(x));
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it("refuses a radix out of range, too few digits, and numbers a round's PRF block cannot hold", async () => {
    expect(() => ff1(1, bytes(AES128))).toThrow(/radix/);
    expect(() => ff1(65_536, bytes(AES128))).toThrow(/radix/);
    await expect(ff1(10, bytes(AES128)).encrypt([1])).rejects.toThrow(/too few digits/);
    // Two digits of radix 9 make 81 numbers, fewer than the standard's 100.
    await expect(ff1(9, bytes(AES128)).encrypt([1, 2])).rejects.toThrow(/too few digits/);
    // 60 decimal digits: halves of 30 digits, 100 bits each.
    await expect(ff1(10, bytes(AES128)).encrypt(new Array(60).fill(1))).rejects.toThrow(/more than one PRF block/);
  });
});

describe("public order ids", () => {
  it("are the ones the tools' cipher (@noble/ciphers) gives, both ways, for random internal ids and keys", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.array(fc.bigInt({ min: 0n, max: PUBLIC_ORDER_ID_FLOOR - 1n }), { minLength: 50, maxLength: 50 }),
        async (key, internalIds) => {
          const keyHex = Buffer.from(key).toString("hex");
          const worker = orderIdCipher(keyHex);
          const tools = toolsOrderIds(keyHex);
          for (const id of internalIds.map(String)) {
            const publicId = await worker.toPublic(id);
            expect(publicId).toBe(tools.toPublic(id));
            expect(BigInt(publicId) >= PUBLIC_ORDER_ID_FLOOR).toBe(true);
            expect(await worker.toInternal(publicId)).toBe(id);
            // An internal id a client kept from before public ids stands as it is.
            expect(await worker.toInternal(id)).toBe(id);
          }
        },
      ),
      { numRuns: 20 },
    );
  });
});
