import { Hono, type MiddlewareHandler } from "hono";
import { sign } from "hono/jwt";
import type { AppEnv } from "../http/app-env";
import { ApiError } from "../http/errors";
import { limitCallerGlobally } from "../http/limits";
import { isLoopbackRequest } from "../http/loopback-only";
import { signingSecret } from "../http/secrets";
import { validate } from "../http/validate";
import type { DevLoginToken, StorefrontConfig } from "../shared/api-types";
import { log } from "../shared/log";
import { DevLoginBody } from "../shared/requests";
import { settingsOf } from "../shared/settings";

/** A local sign-in lasts a working day; production tokens come from the shop with its own lifetime. */
const DEV_TOKEN_TTL_SECONDS = 8 * 3600;

const devLoginEnabled: MiddlewareHandler<AppEnv> = async (c, next) => {
  // When off, the route answers like one that does not exist.
  if (!settingsOf(c.env).DEV_LOGIN) throw new ApiError("NOT_FOUND");
  // Whatever LOOPBACK_HOSTS_ONLY says: one wrong variable in production must not mint tokens.
  if (!isLoopbackRequest(c)) {
    log.warn("dev login refused: the request's Host is not loopback", { host: c.req.header("Host") ?? null });
    throw new ApiError("NOT_FOUND");
  }
  await next();
};

/** What the storefront page asks the Worker: this deployment's settings, and local sign-in. */
export const storefrontRoutes = new Hono<AppEnv>()
  .get("/config", (c) => {
    const settings = settingsOf(c.env);
    c.header("Cache-Control", "public, max-age=60");
    return c.json({
      devLogin: settings.DEV_LOGIN && isLoopbackRequest(c),
      allowedOrigins: settings.ALLOWED_ORIGINS,
      turnstileSiteKey: settings.TURNSTILE_SITE_KEY ?? null,
    } satisfies StorefrontConfig);
  })
  // DEV_LOGIN=true (npm start sets it; never in production): a token for any name, signed
  // with JWT_SECRET exactly like the shop's tokens, so the rest of the API cannot tell.
  .post("/dev/login", devLoginEnabled, validate("json", DevLoginBody), async (c) => {
    const { userId } = c.req.valid("json");
    await limitCallerGlobally(c, "dev-login", userId);
    const now = Math.floor(Date.now() / 1000);
    const exp = now + DEV_TOKEN_TTL_SECONDS;
    const secret = signingSecret(c.env, "local sign-in is not available");
    const token = await sign({ sub: userId, iat: now, exp }, secret, "HS256");
    return c.json({ token, userId, expiresAt: new Date(exp * 1000).toISOString() } satisfies DevLoginToken);
  });
