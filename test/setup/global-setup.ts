import type { TestProject } from "vitest/node";
import { startAnalyticsStandIn } from "../../dev/analytics/stand-in.ts";
import { startBeacon } from "../../dev/beacon/stand-in.ts";
import { spawnGateway } from "../../dev/gateway/process.ts";
import { startRedisServer } from "../../dev/lib/redis-server.ts";
import { startSiteverify } from "../../dev/turnstile/siteverify.ts";
import { type SigningJwk, startIdentityProvider } from "./identity-provider.ts";

/**
 * One real redis-server and the project's Upstash gateway for the whole Worker suite, and a
 * shop's identity provider (a JWKS) whose tokens the Worker accepts besides its own HS256.
 * A second gateway serves another database of the same server: a scratch Redis for a test
 * that loses what every file shares (the catalog's Bloom filter), while the other files run.
 * The Worker cannot reach Cloudflare: its TURNSTILE_VERIFY_URL is the local siteverify
 * stand-in started here (dev/turnstile/siteverify.ts); nor drand: draws name the local
 * beacon started here (dev/beacon/stand-in.ts). The local runtime keeps no Analytics Engine
 * data point: the funnel's go to the stand-in started here too (dev/analytics/stand-in.ts).
 */
export default async function setup(project: TestProject) {
  const redis = await startRedisServer();
  const token = "test-gateway-token";
  const gateway = await spawnGateway({ redisUrl: redis.url, token });
  const scratchGateway = await spawnGateway({ redisUrl: `${redis.url}/1`, token });
  const identityProvider = await startIdentityProvider();
  const siteverify = await startSiteverify();
  const beacon = await startBeacon();
  const analytics = await startAnalyticsStandIn();
  project.provide("gatewayUrl", gateway.url);
  project.provide("gatewayToken", token);
  project.provide("scratchGatewayUrl", scratchGateway.url);
  project.provide("jwksUrl", identityProvider.jwksUrl);
  project.provide("signingKeys", identityProvider.signingKeys);
  project.provide("siteverifyUrl", siteverify.url);
  project.provide("beaconUrl", beacon.url);
  project.provide("analyticsStandInUrl", analytics.url);
  return async () => {
    await analytics.stop();
    await beacon.stop();
    await siteverify.stop();
    await identityProvider.stop();
    await scratchGateway.stop();
    await gateway.stop();
    await redis.stop();
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    gatewayUrl: string;
    gatewayToken: string;
    scratchGatewayUrl: string;
    jwksUrl: string;
    signingKeys: SigningJwk[];
    siteverifyUrl: string;
    beaconUrl: string;
    analyticsStandInUrl: string;
  }
}
