// One redis-server + gateway per test file (the gateway in this process, so tests can reach
// its internals), plus helpers to talk to both directly.
import { Redis } from "@upstash/redis";
import { Redis as IORedis } from "ioredis";
import { type Gateway, type GatewayOptions, startGateway } from "../../dev/gateway/server.ts";
import { type RedisServer, startRedisServer } from "../../dev/lib/redis-server.ts";

export const TOKEN = "test-token-0123456789";

/** The gateway's stats before it counted anything. */
export const NOTHING_COUNTED = { requests: 0, commands: 0, requestBytes: 0, responseBytes: 0 };

export interface GatewayFixture {
  redisServer: RedisServer;
  gateway: Gateway;
  /** Straight to Redis, to check what the gateway really wrote. */
  direct: IORedis;
  /** The real client with default options (auto-pipelining, base64 responses). */
  client: Redis;
  stop(): Promise<void>;
}

export async function startGatewayFixture(options: Partial<GatewayOptions> = {}): Promise<GatewayFixture> {
  const redisServer = await startRedisServer();
  const gateway = await startGateway({ redisUrl: redisServer.url, token: TOKEN, ...options });
  const direct = new IORedis(redisServer.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  direct.on("error", () => {}); // The outage test stops Redis under it.
  await direct.connect();
  const client = new Redis({ url: gateway.url, token: TOKEN });
  return {
    redisServer,
    gateway,
    direct,
    client,
    async stop() {
      direct.disconnect();
      await gateway.close();
      await redisServer.stop();
    },
  };
}

export interface RawReply {
  status: number;
  headers: Headers;
  /** Parsed JSON body. */
  body: unknown;
}

/** A request the way the client sends it, without the client: for status codes and wire shapes. */
export async function raw(
  gateway: Gateway,
  path: string,
  body: unknown,
  options: { token?: string | null; base64?: boolean; method?: string } = {},
): Promise<RawReply> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  const token = options.token === undefined ? TOKEN : options.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (options.base64) headers["upstash-encoding"] = "base64";
  const method = options.method ?? "POST";
  const res = await fetch(`${gateway.url}${path}`, {
    method,
    headers,
    body: method === "GET" ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text) };
}

/** Connections the gateway holds open under a given client name (CLIENT LIST, seen from Redis). */
export async function connectionsNamed(direct: IORedis, name: string): Promise<number> {
  const list = (await direct.client("LIST")) as string;
  return list.split("\n").filter((line) => line.includes(` name=${name} `)).length;
}
