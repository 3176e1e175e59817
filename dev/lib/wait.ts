// Waiting for something another process does: one polling helper for tools and tests.

/**
 * Polls `check` until it returns something other than `undefined` or `false`, and returns
 * that; throws after `timeoutMs`, naming `what` it waited for (a function is asked then, so
 * the message can tell what was last seen).
 */
export async function eventually<T>(
  what: string | (() => string),
  check: () => Promise<T | undefined | false>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === "function" ? what() : what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Resolves once `signal` aborts, at once when it already has (an abort listener added late never fires). */
export const aborted = (signal: AbortSignal): Promise<void> =>
  signal.aborted
    ? Promise.resolve()
    : new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
