import type { TestProject } from "vitest/node";
import { spawnGateway } from "../../dev/gateway/process.ts";
import { startRedisServer } from "../../dev/lib/redis-server.ts";

/** One real redis-server and the project's Upstash gateway for the whole Worker suite. */
export default async function setup(project: TestProject) {
  const redis = await startRedisServer();
  const token = "test-gateway-token";
  const gateway = await spawnGateway({ redisUrl: redis.url, token });
  project.provide("gatewayUrl", gateway.url);
  project.provide("gatewayToken", token);
  return async () => {
    await gateway.stop();
    await redis.stop();
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    gatewayUrl: string;
    gatewayToken: string;
  }
}
