// How often a waiting buyer's page should poll the line: the answer's retryAfterSec. The
// Worker tells each poll this (src/admission/waiting-room.ts); `npm run cost` prices a
// line's waiting with it.

const clamp = (n: number, min: number, max: number) => Math.min(max, Math.max(min, n));

/**
 * Seconds until a waiting buyer's next poll: until the start, at most 15, while it is ahead;
 * then half the buyer's estimated wait (every 5 s while the line has no estimate), so often
 * near the front and rarely far back; never more than every second, never less than every 15
 * seconds.
 */
export function waitingRetryAfterSec(estimatedWaitSec: number | null, untilStartSec: number): number {
  const soon = estimatedWaitSec === null ? 5 : Math.floor(estimatedWaitSec / 2);
  return clamp(untilStartSec > 0 ? untilStartSec : soon, 1, 15);
}
