import { Hono } from "hono";
import { type AppEnv, keepAliveOf } from "../http/app-env";
import { requireAdmin } from "../http/auth";
import { ApiError, badRequest, unavailable } from "../http/errors";
import { logConfigurationError, orderIdsOf } from "../http/secrets";
import { validate } from "../http/validate";
import type { SecretsKey } from "../orders/endpoint-secrets";
import { endpointsChanged, kickOrderEvents, listDeliveries, replayDelivery } from "../orders/event-deliveries";
import { createEndpoint, endpointExists, listEndpoints, rotateSecret, updateEndpoint } from "../orders/event-endpoints";
import {
  CreateEndpointBody,
  CursorQuery,
  DeliveryIdParam,
  EndpointIdParam,
  endpointUrlRefusal,
  UpdateEndpointBody,
} from "../shared/order-events";
import { settingsOf } from "../shared/settings";

const endpointNotFound = () => new ApiError("ENDPOINT_NOT_FOUND");

/** https to a public host; http to loopback only where the Worker runs locally (npm start). */
function checkUrl(env: Env, url: string): void {
  const refusal = endpointUrlRefusal(url, { allowLoopback: settingsOf(env).LOOPBACK_HOSTS_ONLY });
  if (refusal) throw badRequest(`url: ${refusal}`);
}

/** ORDER_EVENT_SECRETS_KEY, which seals a new secret: 503 when unset (never a secret stored in plain text). */
function secretsKey(env: Env): SecretsKey {
  const key = settingsOf(env).ORDER_EVENT_SECRETS_KEY;
  if (key) return key;
  logConfigurationError("ORDER_EVENT_SECRETS_KEY", "unset: endpoint secrets cannot be sealed");
  throw unavailable("endpoint secrets cannot be stored: this server's ORDER_EVENT_SECRETS_KEY is not set", 60);
}

/** /admin/webhooks: the shop's endpoints for order events, and what was delivered to them. */
export const eventEndpointRoutes = new Hono<AppEnv>()
  .use(requireAdmin)
  .post("/", validate("json", CreateEndpointBody), async (c) => {
    const body = c.req.valid("json");
    checkUrl(c.env, body.url);
    const endpoint = await createEndpoint(c.env.DB, secretsKey(c.env), body);
    endpointsChanged();
    return c.json(endpoint, 201);
  })
  .get("/", async (c) => c.json({ endpoints: await listEndpoints(c.env.DB) }))
  .patch("/:id", validate("param", EndpointIdParam), validate("json", UpdateEndpointBody), async (c) => {
    const changes = c.req.valid("json");
    if (changes.url !== undefined) checkUrl(c.env, changes.url);
    const endpoint = await updateEndpoint(c.env.DB, c.req.valid("param").id, changes);
    if (!endpoint) throw endpointNotFound();
    endpointsChanged();
    // Enabled again: what waited for it is sent now, not at the cron's next run.
    if (changes.enabled === true) keepAliveOf(c)(kickOrderEvents(c.env));
    return c.json(endpoint);
  })
  .post("/:id/rotate-secret", validate("param", EndpointIdParam), async (c) => {
    const endpoint = await rotateSecret(c.env.DB, secretsKey(c.env), c.req.valid("param").id);
    if (!endpoint) throw endpointNotFound();
    return c.json(endpoint);
  })
  .get("/:id/deliveries", validate("param", EndpointIdParam), validate("query", CursorQuery), async (c) => {
    const { id } = c.req.valid("param");
    if (!(await endpointExists(c.env.DB, id))) throw endpointNotFound();
    return c.json(await listDeliveries(c.env.DB, id, c.req.valid("query").cursor, orderIdsOf(c.env)));
  })
  .post("/:id/deliveries/:deliveryId/replay", validate("param", DeliveryIdParam), async (c) => {
    const { id, deliveryId } = c.req.valid("param");
    const delivery = await replayDelivery(c.env.DB, id, deliveryId, orderIdsOf(c.env));
    if (!delivery) throw new ApiError("DELIVERY_NOT_FOUND");
    keepAliveOf(c)(kickOrderEvents(c.env));
    return c.json(delivery, 202);
  });
