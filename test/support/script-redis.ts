// A throw-away redis-server behind the project's Upstash gateway for the Node tests of the Lua
// scripts, started before a file's tests and stopped after them, and the scripts' sources.
import { readFileSync } from "node:fs";
import { Redis } from "@upstash/redis";
import { afterAll, beforeAll } from "vitest";
import { type Gateway, startGateway } from "../../dev/gateway/server.ts";
import { type RedisServer, startRedisServer } from "../../dev/lib/redis-server.ts";

/** A script of lua/ by name, as text. */
export const lua = (name: string) => readFileSync(new URL(`../../lua/${name}.lua`, import.meta.url), "utf8");

/** Registers the file's server and gateway; the client it returns works from the first test on. */
export function scriptRedis(token: string): () => Redis {
  let server: RedisServer | undefined;
  let gateway: Gateway | undefined;
  let redis: Redis | undefined;
  beforeAll(async () => {
    server = await startRedisServer();
    gateway = await startGateway({ redisUrl: server.url, token });
    redis = new Redis({ url: gateway.url, token, automaticDeserialization: false, enableTelemetry: false });
  });
  afterAll(async () => {
    await gateway?.close();
    await server?.stop();
  });
  return () => {
    if (!redis) throw new Error("the script tests' Redis is not started yet");
    return redis;
  };
}
