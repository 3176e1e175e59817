import canonicalize from "canonicalize";
import type { Context } from "hono";
import { MAX_IDEMPOTENCY_KEY_LENGTH } from "../shared/limits";
import { ApiError, badRequest } from "./errors";

/** An Idempotency-Key and the fingerprint of the request that carries it. */
export interface Idempotency {
  key: string;
  fingerprint: string;
}

/**
 * SHA-256 of the validated body as canonical JSON (RFC 8785): key order and spacing do not
 * change it, any field does, including fields a schema gains later.
 */
async function fingerprintOf(body: unknown): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(canonicalize(body)));
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** The request's Idempotency-Key header, checked: 1 to 200 characters; undefined without one. */
export function idempotencyKeyOf(c: Context): string | undefined {
  const key = c.req.header("Idempotency-Key");
  if (key !== undefined && (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH)) {
    throw badRequest(`Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`);
  }
  return key;
}

/** The request's Idempotency-Key with the fingerprint of its validated body, or null without a key. */
export async function idempotencyOf(c: Context, validatedBody: unknown): Promise<Idempotency | null> {
  const key = idempotencyKeyOf(c);
  return key === undefined ? null : { key, fingerprint: await fingerprintOf(validatedBody) };
}

/** A key replays only the request it was first used with; null is a record from before fingerprints. */
export function assertSameRequest(idempotency: Idempotency, recordedFingerprint: string | null): void {
  if (recordedFingerprint !== null && recordedFingerprint !== idempotency.fingerprint) {
    throw new ApiError("IDEMPOTENCY_KEY_REUSED", "this Idempotency-Key was already used with a different request body");
  }
}
