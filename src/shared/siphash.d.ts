// The `siphash` package ships no types: the part of its API the project uses.
declare module "siphash" {
  /** A 128-bit key as four 32-bit words. */
  type Key = readonly [number, number, number, number];
  const SipHash: {
    /** SipHash-2-4 of `message` (a string is hashed as its UTF-8) under `key`, as a 53-bit unsigned integer. */
    hash_uint(key: Key, message: string | Uint8Array): number;
  };
  export default SipHash;
}
