/**
 * Exponential backoff with jitter: retry n (from 0) waits between half and all of
 * min(capMs, baseMs * 2^n). The random half spreads contenders that failed together, so
 * they do not all come back in the same instant; the fixed half keeps the wait growing.
 */
export function backoffDelayMs(retry: number, baseMs: number, capMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** retry);
  return ceiling / 2 + random() * (ceiling / 2);
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
