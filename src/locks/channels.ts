import type { Redis } from "@upstash/redis";

/** One waiter's ear on a lock's channel. */
export interface Listening {
  /** Redis has confirmed the subscription: from now on no message to this waiter is lost. */
  readonly ready: boolean;
  close(): void;
}

interface Hooks {
  onMessage(message: string): void;
  /** Called once, when the subscription becomes ready after this waiter joined. */
  onReady(): void;
}

/**
 * Inside a Worker, I/O belongs to the request that started it: a stream opened by one
 * request cannot wake another, so each waiter subscribes on its own. Elsewhere (Node) the
 * waiters of one process share one subscription per client and channel, kept open a
 * little after the last waiter leaves, so a crowd of waiters costs one stream, not one each.
 */
const SHARED = (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent !== "Cloudflare-Workers";
const LINGER_MS = 250;

interface Shared {
  unsubscribe(): void;
  ready: boolean;
  listeners: Set<Hooks>;
  linger?: ReturnType<typeof setTimeout>;
}
const open = new WeakMap<Redis, Map<string, Shared>>();

function subscribe(redis: Redis, channel: string, onMessage: (m: string) => void, onReady: () => void) {
  const subscriber = redis.subscribe<string>(channel);
  subscriber.on("subscribe", onReady);
  subscriber.on("message", ({ message }) => onMessage(String(message)));
  // A subscription that fails leaves the waiters' fallback backoff to do the waking.
  subscriber.on("error", () => undefined);
  return () => void subscriber.unsubscribe();
}

/**
 * Listens on `channel`. `openOnly`: join a subscription this process already has open
 * (no I/O), or return undefined rather than start one.
 */
export function listen(redis: Redis, channel: string, hooks: Hooks, openOnly = false): Listening | undefined {
  if (!SHARED) {
    if (openOnly) return undefined;
    let ready = false;
    const unsubscribe = subscribe(redis, channel, hooks.onMessage, () => {
      ready = true;
      hooks.onReady();
    });
    return {
      get ready() {
        return ready;
      },
      close: unsubscribe,
    };
  }
  let byChannel = open.get(redis);
  if (!byChannel) {
    byChannel = new Map();
    open.set(redis, byChannel);
  }
  let shared = byChannel.get(channel);
  if (!shared && openOnly) return undefined;
  if (!shared) {
    const entry: Shared = { unsubscribe: () => undefined, ready: false, listeners: new Set() };
    entry.unsubscribe = subscribe(
      redis,
      channel,
      (message) => {
        for (const listener of entry.listeners) listener.onMessage(message);
      },
      () => {
        entry.ready = true;
        for (const listener of entry.listeners) listener.onReady();
      },
    );
    byChannel.set(channel, entry);
    shared = entry;
  }
  const entry = shared;
  if (entry.linger !== undefined) clearTimeout(entry.linger);
  entry.listeners.add(hooks);
  return {
    get ready() {
      return entry.ready;
    },
    close() {
      entry.listeners.delete(hooks);
      if (entry.listeners.size > 0) return;
      entry.linger = setTimeout(() => {
        if (entry.listeners.size > 0) return;
        byChannel.delete(channel);
        entry.unsubscribe();
      }, LINGER_MS);
      // Never keeps a Node process alive on its own.
      (entry.linger as { unref?: () => void }).unref?.();
    },
  };
}
