import { Redis } from "@upstash/redis/cloudflare";
import { type QuorumNode, settingsOf } from "../shared/settings";

export type { Redis };

let cached: { key: string; redis: Redis; env: Env } | undefined;

/**
 * Replies as plain JSON strings, not base64 the client decodes string by string (a merged
 * call's reply holds a string per buyer): everything this Worker keeps in Redis is text it
 * wrote itself, so there are no bytes that are not UTF-8 to protect.
 */
const RESPONSE_ENCODING = false;

/**
 * One Upstash client per isolate. Every request is bounded by REDIS_TIMEOUT_MS and retried
 * once on a network error, so an unreachable Redis turns into a quick 503 instead of a hang.
 * Auto-pipelining (the client's default) folds the commands one request issues together
 * into a single HTTP round trip.
 */
export function redisFor(env: Env): Redis {
  // Every request asks; the same env object (an isolate's, as a rule) is answered without building the key.
  if (cached?.env === env) return cached.redis;
  const { UPSTASH_REDIS_REST_URL, UPSTASH_REDIS_REST_TOKEN, REDIS_TIMEOUT_MS } = settingsOf(env);
  const key = `${UPSTASH_REDIS_REST_URL}\n${UPSTASH_REDIS_REST_TOKEN}\n${REDIS_TIMEOUT_MS}`;
  cached = { key, redis: cached?.key === key ? cached.redis : newRedisClient(env), env };
  return cached.redis;
}

/**
 * A client of its own. Auto-pipelining folds together only what one client sends, so the
 * lab gives each isolate it stands for a client, as each real isolate has.
 */
export function newRedisClient(env: Env): Redis {
  const { UPSTASH_REDIS_REST_URL, UPSTASH_REDIS_REST_TOKEN, REDIS_TIMEOUT_MS } = settingsOf(env);
  return new Redis({
    url: UPSTASH_REDIS_REST_URL,
    token: UPSTASH_REDIS_REST_TOKEN,
    // Order ids are 19-digit strings; never let the client turn replies into numbers.
    automaticDeserialization: false,
    responseEncoding: RESPONSE_ENCODING,
    enableTelemetry: false,
    retry: { retries: 1, backoff: () => 25 },
    signal: () => AbortSignal.timeout(REDIS_TIMEOUT_MS),
  });
}

let cachedQuorum: { config: readonly QuorumNode[]; nodes: Redis[] } | undefined;

/**
 * One client per quorum node, per isolate, each request bounded by REDIS_TIMEOUT_MS. No
 * retry: a node that does not answer in time counts as a lost vote, and the lock retries
 * as a whole.
 */
export function quorumRedisFor(env: Env): Redis[] {
  const { LOCK_QUORUM_NODES: config, REDIS_TIMEOUT_MS } = settingsOf(env);
  if (!config) throw new Error("LOCK_QUORUM_NODES is not set");
  if (cachedQuorum?.config !== config) {
    const nodes = config.map(
      ({ url, token }) =>
        new Redis({
          url,
          token,
          automaticDeserialization: false,
          responseEncoding: RESPONSE_ENCODING,
          enableTelemetry: false,
          retry: false,
          signal: () => AbortSignal.timeout(REDIS_TIMEOUT_MS),
        }),
    );
    cachedQuorum = { config, nodes };
  }
  return cachedQuorum.nodes;
}

/** HMGET's raw reply: with automatic deserialization off the client returns the array, one slot per field. */
export async function hashFields(redis: Redis, key: string, ...fields: string[]): Promise<(string | null)[]> {
  return (await redis.hmget(key, ...fields)) as unknown as (string | null)[];
}

/** A hash's field, value, field, value... reply as a record. */
export function hashRecord(pairs: readonly unknown[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (let i = 0; i + 1 < pairs.length; i += 2) fields[String(pairs[i])] = String(pairs[i + 1]);
  return fields;
}

/** HGETALL's raw reply, field, value, field, value...: with automatic deserialization off the client returns it as it came. */
export async function hashEntries(redis: Redis, key: string): Promise<string[]> {
  return ((await redis.hgetall(key)) as unknown as string[] | null) ?? [];
}
