import { Hono, type MiddlewareHandler } from "hono";
import { sign } from "hono/jwt";
import type { AppEnv } from "../http/app-env";
import { allowedOrigins } from "../http/cors";
import { notFound, unavailable } from "../http/errors";
import { limitCallerGlobally } from "../http/global-limits";
import { isLoopbackRequest } from "../http/loopback-only";
import { usableSecret } from "../http/secrets";
import { validate } from "../http/validate";
import type { DevLoginToken, StorefrontConfig } from "../shared/api-types";
import { log } from "../shared/log";
import { DevLoginBody } from "../shared/requests";

/** A local sign-in lasts a working day; production tokens come from the shop with its own lifetime. */
const DEV_TOKEN_TTL_SECONDS = 8 * 3600;

const devLoginEnabled: MiddlewareHandler<AppEnv> = async (c, next) => {
  // Off unless exactly "true": when off, the route answers like one that does not exist.
  if (c.env.DEV_LOGIN !== "true") throw notFound("NOT_FOUND", "no such route");
  // Whatever LOOPBACK_HOSTS_ONLY says: one wrong variable in production must not mint tokens.
  if (!isLoopbackRequest(c)) {
    log.warn("dev login refused: the request's Host is not loopback", { host: c.req.header("Host") ?? null });
    throw notFound("NOT_FOUND", "no such route");
  }
  await next();
};

/** What the storefront page asks the Worker: this deployment's settings, and local sign-in. */
export const storefrontRoutes = new Hono<AppEnv>()
  .get("/config", (c) => {
    c.header("Cache-Control", "public, max-age=60");
    return c.json({
      devLogin: c.env.DEV_LOGIN === "true" && isLoopbackRequest(c),
      allowedOrigins: allowedOrigins(c.env),
      turnstileSiteKey: c.env.TURNSTILE_SITE_KEY || null,
    } satisfies StorefrontConfig);
  })
  // DEV_LOGIN=true (npm start sets it; never in production): a token for any name, signed
  // with JWT_SECRET exactly like the shop's tokens, so the rest of the API cannot tell.
  .post("/dev/login", devLoginEnabled, validate("json", DevLoginBody), async (c) => {
    const { userId } = c.req.valid("json");
    await limitCallerGlobally(c, "dev-login", userId);
    const now = Math.floor(Date.now() / 1000);
    const exp = now + DEV_TOKEN_TTL_SECONDS;
    const secret = usableSecret("JWT_SECRET", c.env.JWT_SECRET);
    if (!secret) throw unavailable("local sign-in needs a usable JWT_SECRET", 60);
    const token = await sign({ sub: userId, iat: now, exp }, secret, "HS256");
    return c.json({ token, userId, expiresAt: new Date(exp * 1000).toISOString() } satisfies DevLoginToken);
  });
