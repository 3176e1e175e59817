// Key names of every lock kind. All keys of one lock share its hash tag (the name in
// braces), so each script touches one slot on a cluster and Upstash locks only those keys.

export interface LockKeys {
  /** The holder's owner token (a lock) or owner -> hold count (a reentrant lock). */
  lock: string;
  /** Counter of fencing tokens, beside the lock. */
  fence: string;
  /** Fair locks: waiters in arrival order, and each one's deadline and lease. */
  queue: string;
  places: string;
  /** Pub/sub channel where releases tell the waiters. */
  channel: string;
  /** Fair locks: a hand-over is published on this prefix + the new holder's owner token. */
  grants: string;
}

function keysUnder(kind: string, name: string): LockKeys {
  const base = `${kind}:{${name}}`;
  return {
    lock: base,
    fence: `${base}:fence`,
    queue: `${base}:queue`,
    places: `${base}:places`,
    channel: `${base}:released`,
    grants: `${base}:granted:`,
  };
}

export const lockKeys = (name: string) => keysUnder("lock", name);
export const reentrantLockKeys = (name: string) => keysUnder("rlock", name);

export interface SemaphoreKeys {
  /** Permit id -> expiry (ms, Redis time). */
  permits: string;
  channel: string;
}

export function semaphoreKeys(name: string): SemaphoreKeys {
  const base = `semaphore:{${name}}`;
  return { permits: base, channel: `${base}:released` };
}
