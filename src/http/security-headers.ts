import type { MiddlewareHandler } from "hono";
import { secureHeaders } from "hono/secure-headers";

/**
 * A restrictive Content-Security-Policy for HTML the Worker serves: scripts, styles, fonts and
 * API calls from its own origin only, nothing inline, images also over https (sale images),
 * no plugins, no <base>, forms only to itself, never framed.
 */
export const HTML_CONTENT_SECURITY_POLICY = {
  defaultSrc: ["'self'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'"],
  imgSrc: ["'self'", "https:", "data:"],
  fontSrc: ["'self'"],
  connectSrc: ["'self'"],
  objectSrc: ["'none'"],
  baseUri: ["'none'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
};

/**
 * For routes that serve HTML (mount it on them): the policy above. The app-wide headers
 * below keep a policy a route set. Headers of a response straight from `fetch` or
 * `env.ASSETS.fetch` are immutable: wrap it first (`new Response(res.body, res)`).
 */
export const htmlSecurityHeaders = secureHeaders({ contentSecurityPolicy: HTML_CONTENT_SECURITY_POLICY });

/**
 * On every response (hono's defaults: nosniff, Referrer-Policy no-referrer, HSTS, ...), with a
 * policy that allows nothing for what is not HTML, and never framed.
 */
export const securityHeaders = secureHeaders({
  contentSecurityPolicy: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] },
  xFrameOptions: "DENY",
  overwrite: false,
});

/**
 * A response that does not say how to cache it is not cached: per-user and admin data must
 * never sit in a browser's or a proxy's cache. Routes that may be cached say so (the sale page).
 */
export const noStoreByDefault: MiddlewareHandler = async (c, next) => {
  await next();
  if (!c.res.headers.has("Cache-Control")) c.res.headers.set("Cache-Control", "no-store");
};
