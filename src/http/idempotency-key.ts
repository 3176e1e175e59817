import { MAX_IDEMPOTENCY_KEY_LENGTH } from "../shared/limits";
import { badRequest } from "./errors";

/** The request's Idempotency-Key header, checked: 1 to 200 characters, or absent where that is allowed. */
export function idempotencyKeyOf(header: string | undefined, required: true): string;
export function idempotencyKeyOf(header: string | undefined, required: false): string | undefined;
export function idempotencyKeyOf(header: string | undefined, required: boolean): string | undefined {
  if (header === undefined && !required) return undefined;
  if (!header || header.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw badRequest(`${required ? "an" : "the"} Idempotency-Key header must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`);
  }
  return header;
}
