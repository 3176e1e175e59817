// How often a waiting buyer's page should poll the line: the answer's retryAfterSec. The
// Worker tells each poll this (src/admission/waiting-room.ts); `npm run cost` prices a
// line's waiting with it.

const clamp = (n: number, min: number, max: number) => Math.min(max, Math.max(min, n));

/**
 * Seconds until a waiting buyer's next poll: until the start, at most 15, while it is ahead;
 * then half the time the line needs to reach them, so often near the front and rarely far
 * back; never more than every second, never less than every 15 seconds.
 */
export function waitingRetryAfterSec(aheadOfYou: number, admitPerSec: number, untilStartSec: number): number {
  return clamp(untilStartSec > 0 ? untilStartSec : Math.floor(aheadOfYou / admitPerSec / 2), 1, 15);
}
