import { LockLostError, type LockLostReason } from "./errors";
import type { Lease } from "./lease";

export interface HoldOptions {
  /** Renewal stops after this long in all, and the signal aborts (`max-hold`): a hung fn cannot keep the lock. */
  maxHoldMs?: number;
  /**
   * Keeps the renewals running after a Worker's response is sent: pass the request's
   * `ctx.waitUntil`. Without it workerd may cancel the timers of a request that answered.
   */
  keepAlive?: (work: Promise<unknown>) => void;
}

/** The work done under a lock: it should stop (and write nothing more) once `signal` aborts. */
export type Held<T> = (signal: AbortSignal, lease: Lease) => Promise<T>;

/**
 * Runs `fn` while holding `lease`, renewing it every leaseMs/3 (the watchdog). The moment
 * a renewal fails, finds the lock gone, or does not answer before the lease runs out, the
 * signal aborts with a LockLostError; renewal stops when fn settles or at maxHoldMs. Then
 * the lease is released and the result returned, or the LockLostError thrown (with fn's
 * own error as its cause) when the lock was lost on the way.
 */
export async function holdWhile<T>(lease: Lease, fn: Held<T>, options: HoldOptions = {}): Promise<T> {
  const controller = new AbortController();
  const holdUntil = options.maxHoldMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.maxHoldMs;
  const lose = (reason: LockLostReason) => {
    if (controller.signal.aborted) return;
    lease.markLost(reason);
    controller.abort(new LockLostError(lease.lock, reason));
  };
  let done = false;
  // The watchdog's one pending wait; ending it early (fn settled, or the race it was in is
  // decided) also drops its timer.
  let endWait: () => void = () => undefined;
  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, ms));
      endWait = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  const watchdog = (async () => {
    while (!done) {
      await wait(Math.min(Date.now() + lease.leaseMs / 3, holdUntil) - Date.now());
      if (done) return;
      if (Date.now() >= holdUntil) return lose("max-hold");
      // The renewal must answer before the lease it extends runs out.
      const outcome = await Promise.race([
        lease.renew().then(
          (held): LockLostReason | "held" => (held ? "held" : "taken"),
          (): LockLostReason => "renewal-failed",
        ),
        wait(lease.expiresAt - Date.now()).then((): LockLostReason | "settled" => (done ? "settled" : "expired")),
      ]);
      endWait();
      if (outcome === "settled") return;
      if (outcome !== "held") return lose(outcome);
    }
  })();
  options.keepAlive?.(watchdog);

  let result: { ok: true; value: T } | { ok: false; error: unknown };
  try {
    result = { ok: true, value: await fn(controller.signal, lease) };
  } catch (error) {
    result = { ok: false, error };
  }
  done = true;
  endWait();
  await watchdog;
  // Compare-and-delete: harmless when the lock is someone else's by now.
  await lease.release().catch(() => false);
  if (controller.signal.aborted) {
    const lost = controller.signal.reason as LockLostError;
    throw result.ok ? lost : new LockLostError(lease.lock, lost.reason, { cause: result.error });
  }
  if (!result.ok) throw result.error;
  return result.value;
}
