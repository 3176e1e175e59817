import type { Context, MiddlewareHandler } from "hono";
import { isLoopbackHost } from "../shared/loopback";
import { settingsOf } from "../shared/settings";
import type { AppEnv } from "./app-env";
import { ApiError } from "./errors";

/** Whether the request names this machine as its Host (the header, else the URL's host). */
export const isLoopbackRequest = (c: Context): boolean => isLoopbackHost(c.req.header("Host") ?? new URL(c.req.url).host);

/**
 * With LOOPBACK_HOSTS_ONLY=true (npm start sets it; off in production), requests whose Host is
 * not a loopback name are refused: a web page whose DNS name is rebound to 127.0.0.1 must not
 * drive the local Worker with its admin or user tokens.
 */
export const loopbackHostsOnly: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (settingsOf(c.env).LOOPBACK_HOSTS_ONLY && !isLoopbackRequest(c)) {
    throw new ApiError("HOST_NOT_ALLOWED");
  }
  await next();
};
