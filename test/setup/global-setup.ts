import type { TestProject } from "vitest/node";
import { spawnGateway } from "../../dev/gateway/process.ts";
import { startRedisServer } from "../../dev/lib/redis-server.ts";
import { type SigningJwk, startIdentityProvider } from "./identity-provider.ts";

/**
 * One real redis-server and the project's Upstash gateway for the whole Worker suite, and a
 * shop's identity provider (a JWKS) whose tokens the Worker accepts besides its own HS256.
 */
export default async function setup(project: TestProject) {
  const redis = await startRedisServer();
  const token = "test-gateway-token";
  const gateway = await spawnGateway({ redisUrl: redis.url, token });
  const identityProvider = await startIdentityProvider();
  project.provide("gatewayUrl", gateway.url);
  project.provide("gatewayToken", token);
  project.provide("jwksUrl", identityProvider.jwksUrl);
  project.provide("signingKeys", identityProvider.signingKeys);
  return async () => {
    await identityProvider.stop();
    await gateway.stop();
    await redis.stop();
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    gatewayUrl: string;
    gatewayToken: string;
    jwksUrl: string;
    signingKeys: SigningJwk[];
  }
}
