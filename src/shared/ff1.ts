// FF1 (NIST SP 800-38G), the format-preserving cipher of the public order ids
// (src/shared/public-order-id.ts), over Web Crypto's AES. Written here because Web Crypto has
// no FF1, while FF1 needs of AES only its PRF, CBC-MAC with a zero IV, and Web Crypto's
// AES-CBC gives it: over whole blocks, the last block of the ciphertext before the padding
// block is the MAC. A library (@noble/ciphers) brings an AES of its own in JavaScript, about a
// twentieth of the Worker's bundle for one function. It stays a dev dependency:
// test/node/ff1.test.ts holds this FF1 to NIST's sample vectors and to it on random ids, both ways.
//
// One PRF block per round (d <= 16 bytes: numbers of up to 96 bits per half), which every
// radix and length of NIST's samples and of the order ids need; longer ones are refused.

export interface FF1 {
  encrypt(digits: readonly number[]): Promise<number[]>;
  decrypt(digits: readonly number[]): Promise<number[]>;
}

const ROUNDS = 10;
const BLOCK = 16;

/** NUM_radix(X): the digits as a number, the first the most significant. */
const numberOf = (digits: readonly number[], radix: bigint): bigint => digits.reduce((n, d) => n * radix + BigInt(d), 0n);

/** STR^m_radix(x): `m` digits of `x`. */
function digitsOf(x: bigint, m: number, radix: bigint): number[] {
  const digits = new Array<number>(m);
  for (let i = m - 1; i >= 0; i--, x /= radix) digits[i] = Number(x % radix);
  return digits;
}

/** `x` as `length` bytes, big-endian, written into `into` at `at`. */
function writeBigEndian(x: bigint, into: Uint8Array, at: number, length: number): void {
  for (let i = at + length - 1; i >= at; i--, x >>= 8n) into[i] = Number(x & 0xffn);
}

/** FF1 with AES under `key` (16, 24 or 32 bytes) over digits of `radix`, tweaked by `tweak`. */
export function ff1(radix: number, key: Uint8Array<ArrayBuffer>, tweak: Uint8Array<ArrayBuffer> = new Uint8Array()): FF1 {
  if (!Number.isInteger(radix) || radix < 2 || radix > 0xffff) throw new Error(`FF1: radix ${radix} is not 2 to 65535`);
  const aes = crypto.subtle.importKey("raw", key, "AES-CBC", false, ["encrypt"]);
  const big = BigInt(radix);

  /** The ten rounds over `digits`, forwards or backwards (SP 800-38G, algorithms 7 and 8). */
  async function run(digits: readonly number[], decrypt: boolean): Promise<number[]> {
    const n = digits.length;
    if (n < 2 || big ** BigInt(n) < 100n) throw new Error("FF1: too few digits for the radix");
    const u = Math.floor(n / 2);
    const v = n - u;
    const b = Math.ceil((big ** BigInt(v) - 1n).toString(2).length / 8);
    const d = 4 * Math.ceil(b / 4) + 4;
    if (d > BLOCK) throw new Error("FF1: numbers this long take more than one PRF block a round");
    const padding = (((-tweak.length - b - 1) % BLOCK) + BLOCK) % BLOCK;
    // P || Q, Q's round number and number rewritten each round.
    const pq = new Uint8Array(BLOCK + tweak.length + padding + 1 + b);
    pq.set([1, 2, 1, (radix >> 16) & 0xff, (radix >> 8) & 0xff, radix & 0xff, 10, u % 256]);
    writeBigEndian(BigInt(n), pq, 8, 4);
    writeBigEndian(BigInt(tweak.length), pq, 12, 4);
    pq.set(tweak, BLOCK);
    const aesKey = await aes;
    const iv = new Uint8Array(BLOCK);

    /** y: the first d bytes of PRF(P || Q) for round `i` over the number `num`, as a number. */
    async function roundNumber(i: number, num: bigint): Promise<bigint> {
      pq[pq.length - b - 1] = i;
      writeBigEndian(num, pq, pq.length - b, b);
      const mac = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-CBC", iv }, aesKey, pq), pq.length - BLOCK, d);
      return mac.reduce((y, byte) => (y << 8n) | BigInt(byte), 0n);
    }

    // SP 800-38G's A and B, the two halves.
    let left = digits.slice(0, u);
    let right = digits.slice(u);
    for (let round = 0; round < ROUNDS; round++) {
      const i = decrypt ? ROUNDS - 1 - round : round;
      const m = i % 2 === 0 ? u : v;
      const modulus = big ** BigInt(m);
      if (decrypt) {
        const y = await roundNumber(i, numberOf(left, big));
        const c = (((numberOf(right, big) - y) % modulus) + modulus) % modulus;
        right = left;
        left = digitsOf(c, m, big);
      } else {
        const y = await roundNumber(i, numberOf(right, big));
        const c = (numberOf(left, big) + y) % modulus;
        left = right;
        right = digitsOf(c, m, big);
      }
    }
    return [...left, ...right];
  }

  return { encrypt: (digits) => run(digits, false), decrypt: (digits) => run(digits, true) };
}
