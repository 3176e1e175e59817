import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { AppEnv } from "./app-env";
import { ApiError, handleError, notFoundRoute } from "./http/errors";
import { labRoutes } from "./lab/routes";
import { limitPerIp } from "./limits/callers";
import { orderRoutes } from "./orders/routes";
import { adminRoutes } from "./sales/admin-routes";
import { saleRoutes } from "./sales/public-routes";

const MAX_BODY_BYTES = 16 * 1024;

export const app = new Hono<AppEnv>()
  .use(
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: () => {
        throw new ApiError(413, "PAYLOAD_TOO_LARGE", `request bodies are limited to ${MAX_BODY_BYTES} bytes`);
      },
    }),
  )
  .get("/healthz", (c) => c.json({ ok: true }))
  .use("/api/*", limitPerIp)
  .route("/api/sales", saleRoutes)
  .route("/api/orders", orderRoutes)
  .route("/admin", adminRoutes)
  .route("/lab", labRoutes)
  .notFound(notFoundRoute)
  .onError(handleError);
