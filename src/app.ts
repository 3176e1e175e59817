import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { methodNotAllowed } from "hono/method-not-allowed";
import { memo } from "./checkout/isolate-memo";
import type { AppEnv } from "./http/app-env";
import { publicCors, sameOriginOnly } from "./http/cors";
import { ApiError, handleError, methodNotAllowedRoute, notFoundRoute } from "./http/errors";
import { requireJsonBodies } from "./http/json-bodies";
import { limitPerIp } from "./http/limits";
import { loopbackHostsOnly } from "./http/loopback-only";
import { noStoreByDefault, securityHeaders } from "./http/security-headers";
import { traceRequests } from "./http/trace";
import { onOrdersEnded } from "./orders/order-changes";
import { adminRoutes } from "./routes/admin";
import { checkoutRoutes } from "./routes/checkout";
import { denyRuleRoutes } from "./routes/deny-rules";
import { drawAdminRoutes, drawRoutes } from "./routes/draws";
import { dropControlRoutes } from "./routes/drop-controls";
import { eventEndpointRoutes } from "./routes/event-endpoints";
import { funnelRoutes } from "./routes/funnel";
import { healthRoutes } from "./routes/health";
import { labRoutes } from "./routes/lab";
import { laneAdminRoutes } from "./routes/lanes";
import { adminOrderRoutes, buyerOrderRoutes } from "./routes/order-lists";
import { orderRoutes } from "./routes/orders";
import { queueDrawRoutes } from "./routes/queue-draws";
import { saleRoutes } from "./routes/sales";
import { scheduledRoutes } from "./routes/scheduled";
import { storefrontRoutes } from "./routes/storefront";
import { waitingRoomRoutes } from "./routes/waiting-room";
import { webhookRoutes } from "./routes/webhooks";
import { onSaleForgotten } from "./sales/known-sales";
import { MAX_BODY_BYTES } from "./shared/limits";

// What checkout's memo keeps is forgotten with the sale's record (an edit, a restore), and
// with orders that ended and gave their units back.
onSaleForgotten(memo.saleChanged);
onOrdersEnded(memo.returnedAll);

const root = new Hono<AppEnv>();

/** The whole API, mounted in one chain: every route the Worker answers is listed here. */
export const app = root
  .use(traceRequests, securityHeaders, noStoreByDefault)
  // A known path asked with another method: 405 with Allow, from this app's own routes.
  .use(methodNotAllowed({ app: root, onMethodNotAllowed: methodNotAllowedRoute }))
  .use(loopbackHostsOnly)
  .use(
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: () => {
        throw new ApiError("PAYLOAD_TOO_LARGE", `request bodies are limited to ${MAX_BODY_BYTES} bytes`);
      },
    }),
  )
  .use(requireJsonBodies)
  .route("/", healthRoutes) //              GET  /healthz
  .use("/api/*", publicCors) //              before the per-IP limit: a 429 must be readable cross-origin
  .use("/api/*", limitPerIp)
  .route("/api", storefrontRoutes) //        GET  /api/config, POST /api/dev/login (DEV_LOGIN=true)
  .route("/api/sales", saleRoutes) //        GET  /api/sales/:saleId
  .route("/api/sales", checkoutRoutes) //    POST /api/sales/:saleId/checkout
  .route("/api/sales", waitingRoomRoutes) // POST /api/sales/:saleId/queue (join), GET .../queue (poll)
  .route("/api/sales", queueDrawRoutes) //  GET  /api/sales/:saleId/queue/draw(/places): a random pre-queue published
  .route("/api/sales", drawRoutes) //       POST /api/sales/:saleId/entries, GET|DELETE .../entries/mine, GET .../draw(/entries)
  .route("/api/orders", buyerOrderRoutes) // GET  /api/orders: the caller's orders
  .route("/api/orders", orderRoutes) //      GET  /api/orders/:orderId, POST .../pay, POST .../cancel
  .use("/admin/*", sameOriginOnly)
  .route("/admin/webhooks", eventEndpointRoutes) // the shop's endpoints for order events
  .route("/admin", adminOrderRoutes) //      GET  /admin/sales/:saleId/orders(.csv), /admin/orders/:orderId
  .route("/admin/deny-rules", denyRuleRoutes) // GET, POST /admin/deny-rules, DELETE /admin/deny-rules/:ruleId
  .route("/admin/scheduled", scheduledRoutes) // POST /admin/scheduled: the cron's run (LOOPBACK_HOSTS_ONLY=true only)
  .route("/admin", drawAdminRoutes) //      POST /admin/sales/:saleId/draw
  .route("/admin", laneAdminRoutes) //      access codes (POST .../lanes/:lane/codes, GET|DELETE .../codes), staff passes (.../bypass)
  .route("/admin", dropControlRoutes) //     a waiting room's view, places and live controls (GET|PATCH .../queue, GET .../queue/places, .../queue/pause|resume|enable), PUT .../notice
  .route("/admin", funnelRoutes) //          GET  /admin/sales/:saleId/funnel, /admin/funnel (Analytics Engine)
  .route("/admin", adminRoutes) //           POST /admin/sales, GET /admin/sales/:saleId/report|stats
  .route("/webhooks", webhookRoutes) //      POST /webhooks/payments (signed)
  .route("/lab", labRoutes) //               the oversell lab, when LAB_ENABLED=true
  .notFound(notFoundRoute)
  .onError(handleError);
