// The storefront's config and local sign-in, documented beside src/routes/storefront.ts
// (src/shared/route-docs.ts: the Worker never imports them).
import * as Bodies from "../shared/api-types";
import * as Requests from "../shared/requests";
import { CALLER_LIMITED, type RouteDoc } from "../shared/route-docs";

export const storefrontDocs: readonly RouteDoc[] = [
  {
    method: "get",
    path: "/api/config",
    tag: "storefront",
    summary: "This deployment's settings for a storefront page",
    auth: "none",
    responses: { 200: { description: "the settings", body: Bodies.StorefrontConfig } },
    errors: [],
  },
  {
    method: "post",
    path: "/api/dev/login",
    tag: "storefront",
    summary: "Local sign-in: a user token for any name (DEV_LOGIN=true only)",
    description: "Off by default and in production: then it answers 404 NOT_FOUND like a route that does not exist.",
    auth: "none",
    body: { schema: Requests.DevLoginBody, required: true },
    responses: { 200: { description: "a token for the name, signed like the shop's", body: Bodies.DevLoginToken } },
    errors: ["BAD_REQUEST", ["NOT_FOUND", "DEV_LOGIN is off, or the request's Host is not loopback"], ...CALLER_LIMITED],
  },
];
