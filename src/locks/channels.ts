import type { Redis } from "@upstash/redis";

/** One waiter's ear on a lock's channel. */
export interface Listening {
  /** Redis has confirmed the subscription: from now on no message to this waiter is lost. */
  readonly ready: boolean;
  close(): void;
}

/**
 * Where a waiter listens: its channel, and optionally a pattern that covers the channels
 * of every waiter of the lock (fair waiters each have a channel of their own).
 */
export interface Ear {
  channel: string;
  sharedPattern?: string;
}

interface Hooks {
  onMessage(message: string): void;
  /** Called once, when the subscription becomes ready after this waiter joined. */
  onReady(): void;
}

/**
 * Inside a Worker, I/O belongs to the request that started it: a stream opened by one
 * request cannot wake another, so each waiter subscribes to its own channel on its own.
 * Elsewhere (Node) the waiters of one process share one subscription per client and
 * channel (or pattern), kept open a little after the last waiter leaves, so a crowd of
 * waiters costs one stream, not one each.
 */
const SHARED = (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent !== "Cloudflare-Workers";
const LINGER_MS = 250;

/** The client JSON-parses payloads it can (pattern messages always); waiters read text. */
const text = (message: unknown) => (typeof message === "string" ? message : JSON.stringify(message));

function subscribe(
  redis: Redis,
  target: { channel: string } | { pattern: string },
  on: { message(channel: string, message: string): void; ready(): void; error(): void },
) {
  if ("pattern" in target) {
    const subscriber = redis.psubscribe<unknown>(target.pattern);
    subscriber.on("psubscribe", on.ready);
    subscriber.on("pmessage", ({ channel, message }) => on.message(channel, text(message)));
    subscriber.on("error", on.error);
    return () => void subscriber.unsubscribe();
  }
  const subscriber = redis.subscribe<unknown>(target.channel);
  subscriber.on("subscribe", on.ready);
  subscriber.on("message", ({ channel, message }) => on.message(channel, text(message)));
  // A subscription that fails leaves the waiters' fallback backoff to do the waking.
  subscriber.on("error", on.error);
  return () => void subscriber.unsubscribe();
}

interface Shared {
  unsubscribe(): void;
  ready: boolean;
  /** Each waiter with the channel it listens on. */
  listeners: Map<Hooks, string>;
  linger?: ReturnType<typeof setTimeout>;
}
const open = new WeakMap<Redis, Map<string, Shared>>();

/**
 * Listens on `ear`. `openOnly`: join a subscription this process already has open (no
 * I/O), or return undefined rather than start one.
 */
export function listen(redis: Redis, ear: Ear, hooks: Hooks, openOnly = false): Listening | undefined {
  if (!SHARED) {
    if (openOnly) return undefined;
    let ready = false;
    const unsubscribe = subscribe(
      redis,
      { channel: ear.channel },
      {
        message: (_channel, message) => hooks.onMessage(message),
        ready: () => {
          ready = true;
          hooks.onReady();
        },
        error: () => undefined,
      },
    );
    return {
      get ready() {
        return ready;
      },
      close: unsubscribe,
    };
  }
  let byTarget = open.get(redis);
  if (!byTarget) {
    byTarget = new Map();
    open.set(redis, byTarget);
  }
  const key = ear.sharedPattern ?? ear.channel;
  let shared = byTarget.get(key);
  if (!shared && openOnly) return undefined;
  if (!shared) {
    const entry: Shared = { unsubscribe: () => undefined, ready: false, listeners: new Map() };
    entry.unsubscribe = subscribe(redis, ear.sharedPattern ? { pattern: ear.sharedPattern } : { channel: ear.channel }, {
      message: (channel, message) => {
        for (const [listener, heard] of entry.listeners) if (heard === channel) listener.onMessage(message);
      },
      ready: () => {
        entry.ready = true;
        for (const listener of entry.listeners.keys()) listener.onReady();
      },
      // Failed: its waiters fall back to the backoff, and the next waiter subscribes afresh.
      error: () => {
        if (byTarget.get(key) === entry) byTarget.delete(key);
      },
    });
    byTarget.set(key, entry);
    shared = entry;
  }
  const entry = shared;
  if (entry.linger !== undefined) clearTimeout(entry.linger);
  entry.listeners.set(hooks, ear.channel);
  return {
    get ready() {
      return entry.ready;
    },
    close() {
      entry.listeners.delete(hooks);
      if (entry.listeners.size > 0) return;
      entry.linger = setTimeout(() => {
        if (entry.listeners.size > 0) return;
        if (byTarget.get(key) === entry) byTarget.delete(key);
        entry.unsubscribe();
      }, LINGER_MS);
      // Never keeps a Node process alive on its own.
      (entry.linger as { unref?: () => void }).unref?.();
    },
  };
}
