// What makes a user id (a token's `sub`) usable. A lone UTF-16 surrogate turns into U+FFFD on
// its way to Redis while D1 keeps it as sent, so "x\ud800" and "x\ufffd" would be one buyer
// in Redis and two in D1; control characters, line breaks and blank ids break logs and
// support tools.
import { MAX_USER_ID_LENGTH } from "./limits";

/** Text that is not well-formed Unicode: Redis would store U+FFFD where D1 keeps what was sent. */
export const LONE_SURROGATE = /\p{Cs}/u;
/** Control characters, and the Unicode line and paragraph separators that break a line as well. */
const CONTROL_CHARACTER = /[\p{Cc}\p{Zl}\p{Zp}]/u;

/** Why `userId` cannot name a buyer, or undefined when it can. */
export function userIdProblem(userId: string): string | undefined {
  if (userId.trim() === "") return "is blank";
  if (userId.length > MAX_USER_ID_LENGTH) return `is longer than ${MAX_USER_ID_LENGTH} characters`;
  if (LONE_SURROGATE.test(userId)) return "is not well-formed Unicode";
  if (CONTROL_CHARACTER.test(userId)) return "contains control characters";
  return undefined;
}
