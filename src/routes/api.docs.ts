// Every route's docs, module by module in the order src/app.ts mounts them: what
// `npm run generate` builds the API document from, and what the tests hold the app to.
// Tooling and tests import this; the Worker never does (src/shared/route-docs.ts).
import type { RouteDoc } from "../shared/route-docs";
import { adminDocs } from "./admin.docs";
import { checkoutDocs } from "./checkout.docs";
import { denyRulesDocs } from "./deny-rules.docs";
import { drawsDocs } from "./draws.docs";
import { dropControlsDocs } from "./drop-controls.docs";
import { eventEndpointsDocs } from "./event-endpoints.docs";
import { funnelDocs } from "./funnel.docs";
import { healthDocs } from "./health.docs";
import { labDocs } from "./lab.docs";
import { lanesDocs } from "./lanes.docs";
import { orderListsDocs } from "./order-lists.docs";
import { ordersDocs } from "./orders.docs";
import { queueDrawsDocs } from "./queue-draws.docs";
import { salesDocs } from "./sales.docs";
import { scheduledDocs } from "./scheduled.docs";
import { storefrontDocs } from "./storefront.docs";
import { waitingRoomDocs } from "./waiting-room.docs";
import { webhooksDocs } from "./webhooks.docs";

export const ROUTE_DOCS: readonly RouteDoc[] = [
  ...healthDocs,
  ...storefrontDocs,
  ...salesDocs,
  ...checkoutDocs,
  ...waitingRoomDocs,
  ...queueDrawsDocs,
  ...drawsDocs.filter((d) => d.tag !== "admin"),
  // The buyer's list is mounted here, the admin's lists beside the other admin routes.
  ...orderListsDocs,
  ...ordersDocs,
  ...eventEndpointsDocs,
  ...denyRulesDocs,
  ...scheduledDocs,
  ...drawsDocs.filter((d) => d.tag === "admin"),
  ...lanesDocs,
  ...dropControlsDocs,
  ...funnelDocs,
  ...adminDocs,
  ...webhooksDocs,
  ...labDocs,
];
