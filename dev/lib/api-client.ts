// The API as its callers use it, typed: the Node-side tests, the load runner, the
// benchmarks, `npm start` and the Worker tests (through SELF.fetch) all go through this one
// client. It needs nothing but `fetch`, so it runs in Node and in workerd alike.

import type * as z from "zod/mini";
import type {
  AdminOrderDetail,
  AdminOrderPage,
  AdminSaleView,
  BuyerOrderPage,
  BypassPass,
  CatalogPage,
  CheckoutAccepted,
  CodeBatchCreated,
  CodeBatches,
  DrawEntriesPage,
  DrawView,
  EntryAnswer,
  ErrorBody,
  FunnelSeries,
  MyEntry,
  OrderView,
  QueueDrawPlacesPage,
  QueueDrawView,
  QueueJoined,
  QueuePlaces,
  QueuePosition,
  QueueStats,
  ReconciliationReport,
  SalesFunnel,
  SaleView,
} from "../../src/shared/api-types.ts";
import type { StrategyName } from "../../src/shared/lab-strategies.ts";
import type { LabSaleReport, ReadPathFigures } from "../../src/shared/lab-types.ts";
import type { EndpointView } from "../../src/shared/order-events.ts";
import type { ReadPathExperimentBody } from "../../src/shared/requests.ts";
import { mintUserToken } from "./user-tokens.ts";

/** Sends a request to the Worker: `path` is the part after the origin. */
export type Fetch = (path: string, init?: RequestInit) => Promise<Response>;

/** What one checkout answered: `code` is ACCEPTED, the API's error code, or why there was no answer. */
export interface Answer {
  status: number;
  code: string;
  orderId?: string;
  headers?: Headers;
}

/** A call's status, its body when it succeeded, else the API's error code and message. */
export interface ApiResult<T> {
  status: number;
  body?: T;
  code?: string;
  message?: string;
  headers: Headers;
}

/** A call the client expected to succeed did not. */
export class ApiCallError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A variant as create and edit take it (a size, a colour, a tier). */
export interface VariantInput {
  id: string;
  label: string;
  stock: number;
  price?: number;
}

export interface SaleInput {
  name: string;
  /** Without variants only: with them the stock is their sum. */
  stock?: number;
  variants?: VariantInput[];
  startsAt: string;
  endsAt: string;
  admission?: { rate: number; burst: number };
  humanCheck?: boolean;
  price?: number;
  currency?: string;
  paymentWindowSec?: number;
  perUserLimit?: number;
  description?: string;
  imageUrl?: string;
  queue?: QueueInput;
  /** Sold by draw: entries between opensAt and closesAt, a beacon's round mixed into the shuffle. */
  draw?: { opensAt: string; closesAt: string; beacon?: { url: string; round: number } } | null;
  /** Presale lanes before startsAt, in start order: code holders buy from each one's startsAt. */
  lanes?: LaneInput[];
}

/** A presale lane as create and edit take it. */
export interface LaneInput {
  name: string;
  startsAt: string;
  stock?: number;
  variants?: Record<string, number>;
}

/** A sale's waiting room as create and edit take it (fields left out keep their value or default). */
export interface QueueInput {
  mode?: "off" | "fifo" | "random";
  prequeueSec?: number;
  admitPerSec?: number;
  passTtlSec?: number;
}

/** PATCH /admin/sales/:saleId: what an edit may change. */
export type SaleEdit = Partial<
  Pick<
    SaleInput,
    | "name"
    | "stock"
    | "variants"
    | "startsAt"
    | "endsAt"
    | "admission"
    | "description"
    | "queue"
    | "humanCheck"
    | "draw"
    | "lanes"
  >
> & {
  imageUrl?: string | null;
};

export const checkoutPath = (saleId: string) => `/api/sales/${saleId}/checkout`;
export const labCheckoutPath = (strategy: StrategyName, labSaleId: string) => `/lab/${strategy}/sales/${labSaleId}/checkout`;

async function errorOf(res: Response, what: string): Promise<ApiCallError> {
  const text = await res.text();
  let code = `HTTP_${res.status}`;
  try {
    code = (JSON.parse(text) as ErrorBody).error.code ?? code;
  } catch {
    // not the API's error shape
  }
  return new ApiCallError(res.status, code, `${what}: HTTP ${res.status} ${text}`);
}

/** Reads a checkout's response into an answer; never throws. */
export async function answerOf(res: Response): Promise<Answer> {
  const body = (await res.json().catch(() => undefined)) as Partial<CheckoutAccepted & ErrorBody> | undefined;
  if (res.status === 202) return { status: 202, code: "ACCEPTED", orderId: body?.orderId, headers: res.headers };
  return { status: res.status, code: body?.error?.code ?? `HTTP_${res.status}`, headers: res.headers };
}

export class ApiClient {
  constructor(
    private readonly options: {
      fetch: Fetch;
      adminToken: string;
      /** The Worker's JWT_SECRET, to mint user tokens it accepts. */
      jwtSecret: string;
    },
  ) {}

  /** A user token the Worker accepts: HS256, `sub` = the user id, with an expiry. */
  userToken(userId: string, ttlSeconds?: number): Promise<string> {
    return mintUserToken(userId, this.options.jwtSecret, ttlSeconds);
  }

  /** Sends a request as it is. */
  fetch(path: string, init?: RequestInit): Promise<Response> {
    return this.options.fetch(path, init);
  }

  private admin(path: string, init: RequestInit = {}): Promise<Response> {
    return this.options.fetch(path, {
      ...init,
      headers: {
        Authorization: `Bearer ${this.options.adminToken}`,
        "Content-Type": "application/json",
        ...(init.headers as Record<string, string> | undefined),
      },
    });
  }

  private async adminJson<T>(path: string, init?: RequestInit): Promise<T> {
    const res = await this.admin(path, init);
    if (!res.ok) throw await errorOf(res, path);
    return (await res.json()) as T;
  }

  /**
   * Creates a sale. By default it is open now for an hour, with 10 units, no payment step
   * (orders are final once settled) and an admission bucket no crowd here can empty (the
   * crowd, not the bucket, is what tests drive). A sale with `variants` gets no stock of its own.
   */
  createSale(input: Partial<SaleInput> = {}, { idempotencyKey }: { idempotencyKey?: string } = {}): Promise<AdminSaleView> {
    const body: SaleInput = {
      name: "test sale",
      ...(input.variants === undefined && { stock: 10 }),
      startsAt: new Date(Date.now() - 1000).toISOString(),
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      admission: { rate: 100_000, burst: 1_000_000 },
      paymentWindowSec: 0,
      ...input,
    };
    return this.adminJson<AdminSaleView>("/admin/sales", {
      method: "POST",
      body: JSON.stringify(body),
      headers: idempotencyKey ? { "Idempotency-Key": idempotencyKey } : {},
    });
  }

  /** PATCH /admin/sales/:saleId, If-Match when `ifVersion` is given. */
  editSale(saleId: string, edit: SaleEdit, ifVersion?: number): Promise<ApiResult<AdminSaleView>> {
    return this.adminResult(`/admin/sales/${saleId}`, {
      method: "PATCH",
      body: JSON.stringify(edit),
      headers: ifVersion === undefined ? {} : { "If-Match": `"${ifVersion}"` },
    });
  }

  /** POST /admin/sales/:saleId/pause, /resume or /cancel. */
  setSaleState(saleId: string, action: "pause" | "resume" | "cancel"): Promise<ApiResult<AdminSaleView>> {
    return this.adminResult(`/admin/sales/${saleId}/${action}`, { method: "POST" });
  }

  /** GET /api/sales: a page of the catalog. */
  async catalog(cursor?: string): Promise<CatalogPage> {
    const res = await this.options.fetch(`/api/sales${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ""}`);
    if (!res.ok) throw await errorOf(res, "catalog");
    return (await res.json()) as CatalogPage;
  }

  /** The first sale of the catalog (upcoming and live, by start) that `match` picks, read a page at a time. */
  async findInCatalog(match: (sale: SaleView) => boolean): Promise<SaleView | undefined> {
    let cursor: string | undefined;
    do {
      const page = await this.catalog(cursor);
      const found = page.sales.find(match);
      if (found) return found;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return undefined;
  }

  report(saleId: string): Promise<ReconciliationReport> {
    return this.adminJson<ReconciliationReport>(`/admin/sales/${saleId}/report`);
  }

  async sale(saleId: string): Promise<SaleView> {
    const res = await this.options.fetch(`/api/sales/${saleId}`);
    if (!res.ok) throw await errorOf(res, `sale ${saleId}`);
    return (await res.json()) as SaleView;
  }

  /** POST /api/sales/:saleId/checkout as it answered. */
  checkoutResponse(saleId: string, token: string, init: RequestInit = {}): Promise<Response> {
    return this.options.fetch(checkoutPath(saleId), {
      method: "POST",
      ...init,
      headers: { Authorization: `Bearer ${token}`, ...(init.headers as Record<string, string> | undefined) },
    });
  }

  /** POST /api/sales/:saleId/queue: join the waiting room (a presale lane's own line with `accessCode`, while one is open). */
  joinWaitingRoom(saleId: string, token: string, accessCode?: string): Promise<ApiResult<QueueJoined>> {
    const headers = { Authorization: `Bearer ${token}`, ...(accessCode !== undefined && { "Access-Code": accessCode }) };
    return this.result(`/api/sales/${saleId}/queue`, { method: "POST", headers });
  }

  /** GET /api/sales/:saleId/queue with the ticket. */
  pollQueue(saleId: string, token: string, ticket: string): Promise<ApiResult<QueuePosition>> {
    return this.result(`/api/sales/${saleId}/queue`, { headers: { Authorization: `Bearer ${token}`, "Queue-Ticket": ticket } });
  }

  /** GET /admin/sales/:saleId/queue: the waiting room's counts, pace, hold, notice and actions (the counts of a presale lane's own line with `lane`). */
  queueStats(saleId: string, lane?: string): Promise<QueueStats> {
    return this.adminJson<QueueStats>(`/admin/sales/${saleId}/queue${lane === undefined ? "" : `?lane=${lane}`}`);
  }

  /** POST /admin/sales/:saleId/queue/pause or /resume: hold admission (every place kept), or let the line move again; `message` becomes the notice. */
  holdAdmission(saleId: string, action: "pause" | "resume", message?: string): Promise<ApiResult<QueueStats>> {
    return this.adminResult(`/admin/sales/${saleId}/queue/${action}`, {
      method: "POST",
      ...(message !== undefined && { body: JSON.stringify({ message }) }),
    });
  }

  /** PATCH /admin/sales/:saleId/queue: the ceiling on places let in per second, live. */
  setAdmitRate(saleId: string, admitPerSec: number): Promise<ApiResult<QueueStats>> {
    return this.adminResult(`/admin/sales/${saleId}/queue`, { method: "PATCH", body: JSON.stringify({ admitPerSec }) });
  }

  /** POST /admin/sales/:saleId/queue/enable: a live sale behind the waiting room, first come first served from now. */
  enableWaitingRoom(saleId: string): Promise<ApiResult<QueueStats>> {
    return this.adminResult(`/admin/sales/${saleId}/queue/enable`, { method: "POST" });
  }

  /** PUT /admin/sales/:saleId/notice: the notice on the sale's pages; null takes it down. */
  setNotice(saleId: string, message: string | null): Promise<ApiResult<QueueStats>> {
    return this.adminResult(`/admin/sales/${saleId}/notice`, { method: "PUT", body: JSON.stringify({ message }) });
  }

  /** GET /admin/sales/:saleId/queue/places?from=: a page of who holds each place (of a presale lane's own line with `lane`). */
  queuePlaces(saleId: string, from = 1, lane?: string): Promise<QueuePlaces> {
    const ofLane = lane === undefined ? "" : `&lane=${lane}`;
    return this.adminJson<QueuePlaces>(`/admin/sales/${saleId}/queue/places?from=${from}${ofLane}`);
  }

  /** GET /api/sales/:saleId/queue/draw?lane=: a random waiting room's draw (of a lane's own line with `lane`) as anyone may check it. */
  queueDraw(saleId: string, lane?: string): Promise<ApiResult<QueueDrawView>> {
    return this.result(`/api/sales/${saleId}/queue/draw${lane === undefined ? "" : `?lane=${lane}`}`, {});
  }

  /** GET /api/sales/:saleId/queue/draw/places?cursor=&lane=: a page of the published pre-queue (of a lane's own line with `lane`). */
  queueDrawPlaces(saleId: string, cursor?: string, lane?: string): Promise<ApiResult<QueueDrawPlacesPage>> {
    const query = new URLSearchParams({ ...(cursor !== undefined && { cursor }), ...(lane !== undefined && { lane }) });
    return this.result(`/api/sales/${saleId}/queue/draw/places${query.size === 0 ? "" : `?${query}`}`, {});
  }

  /** POST /api/sales/:saleId/entries: enter the draw (or change the entry). */
  enterDraw(
    saleId: string,
    token: string,
    entry: { variant?: string; quantity?: number } = {},
    headers: Record<string, string> = {},
  ): Promise<ApiResult<EntryAnswer>> {
    return this.result(`/api/sales/${saleId}/entries`, {
      method: "POST",
      body: JSON.stringify(entry),
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", ...headers },
    });
  }

  /** GET /api/sales/:saleId/entries/mine. */
  myEntry(saleId: string, token: string): Promise<ApiResult<MyEntry>> {
    return this.result(`/api/sales/${saleId}/entries/mine`, { headers: { Authorization: `Bearer ${token}` } });
  }

  /** DELETE /api/sales/:saleId/entries/mine. */
  withdrawEntry(saleId: string, token: string): Promise<ApiResult<never>> {
    return this.result(`/api/sales/${saleId}/entries/mine`, { method: "DELETE", headers: { Authorization: `Bearer ${token}` } });
  }

  /** GET /api/sales/:saleId/draw: the draw as anyone may check it. */
  draw(saleId: string): Promise<ApiResult<DrawView>> {
    return this.result(`/api/sales/${saleId}/draw`, {});
  }

  /** GET /api/sales/:saleId/draw/entries?cursor=: a page of the committed leaves. */
  drawEntries(saleId: string, cursor?: string): Promise<ApiResult<DrawEntriesPage>> {
    return this.result(`/api/sales/${saleId}/draw/entries${cursor === undefined ? "" : `?cursor=${cursor}`}`, {});
  }

  /** POST /admin/sales/:saleId/draw: run the draw now. */
  runDraw(saleId: string): Promise<ApiResult<DrawView>> {
    return this.adminResult(`/admin/sales/${saleId}/draw`, { method: "POST" });
  }

  /** A checkout with an Access-Code (a presale lane's), of `quantity` units of `variant` when named, as it answered. */
  checkoutWithCode(saleId: string, token: string, code: string, quantity?: number, variant?: string): Promise<Answer> {
    const body = quantity === undefined && variant === undefined ? undefined : JSON.stringify({ quantity, variant });
    return this.answer(checkoutPath(saleId), token, body, { "Access-Code": code });
  }

  /** POST /admin/sales/:saleId/lanes/:lane/codes: a batch of codes, shown once. */
  codeBatch(
    saleId: string,
    lane: string,
    batch: { count: number; uses?: number; expiresAt?: string },
  ): Promise<ApiResult<CodeBatchCreated>> {
    return this.adminResult(`/admin/sales/${saleId}/lanes/${lane}/codes`, { method: "POST", body: JSON.stringify(batch) });
  }

  /** GET /admin/sales/:saleId/codes: the batches and per lane its counts. */
  codeBatches(saleId: string): Promise<CodeBatches> {
    return this.adminJson<CodeBatches>(`/admin/sales/${saleId}/codes`);
  }

  /** DELETE /admin/sales/:saleId/codes/:batchId. */
  revokeBatch(saleId: string, batchId: string): Promise<ApiResult<never>> {
    return this.adminResult(`/admin/sales/${saleId}/codes/${batchId}`, { method: "DELETE" });
  }

  /** POST /admin/sales/:saleId/bypass: a staff pass for `userId`. */
  bypass(saleId: string, userId: string): Promise<ApiResult<BypassPass>> {
    return this.adminResult(`/admin/sales/${saleId}/bypass`, { method: "POST", body: JSON.stringify({ userId }) });
  }

  /** A checkout with a Queue-Pass (none when undefined) and, in a presale lane's window, an Access-Code, as it answered. */
  checkoutWithPass(saleId: string, token: string, pass: string | undefined, code?: string): Promise<Answer> {
    return this.answer(checkoutPath(saleId), token, undefined, {
      ...(pass !== undefined && { "Queue-Pass": pass }),
      ...(code !== undefined && { "Access-Code": code }),
    });
  }

  /** GET /healthz, the trivial route benchmarks set beside checkout: code OK when it answered 200. */
  async healthz(): Promise<Answer> {
    const res = await this.options.fetch("/healthz");
    await res.arrayBuffer();
    return { status: res.status, code: res.ok ? "OK" : `HTTP_${res.status}` };
  }

  /** A checkout's outcome (of `variant` when named); a request that got no answer is status 0, NETWORK_ERROR. */
  checkout(saleId: string, token: string, quantity?: number, variant?: string): Promise<Answer> {
    const body = quantity === undefined && variant === undefined ? undefined : JSON.stringify({ quantity, variant });
    return this.answer(checkoutPath(saleId), token, body);
  }

  /** POST /api/orders/:orderId/pay with an Idempotency-Key. */
  async pay(orderId: string, token: string, paymentToken: string, idempotencyKey: string): Promise<ApiResult<OrderView>> {
    return this.result(`/api/orders/${orderId}/pay`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", "Idempotency-Key": idempotencyKey },
      body: JSON.stringify({ paymentToken }),
    });
  }

  /** POST /api/orders/:orderId/cancel. */
  cancel(orderId: string, token: string): Promise<ApiResult<OrderView>> {
    return this.result(`/api/orders/${orderId}/cancel`, { method: "POST", headers: { Authorization: `Bearer ${token}` } });
  }

  /** GET /api/orders/:orderId as the token's user sees it. */
  order(orderId: string, token: string): Promise<ApiResult<OrderView>> {
    return this.result(`/api/orders/${orderId}`, { headers: { Authorization: `Bearer ${token}` } });
  }

  /** POST /admin/webhooks: an endpoint for order events (its secret is in the answer only). */
  addEndpoint(url: string, events: readonly string[]): Promise<EndpointView> {
    return this.adminJson("/admin/webhooks", { method: "POST", body: JSON.stringify({ url, events }) });
  }

  /** GET /admin/webhooks */
  async endpoints(): Promise<EndpointView[]> {
    return (await this.adminJson<{ endpoints: EndpointView[] }>("/admin/webhooks")).endpoints;
  }

  /** PATCH /admin/webhooks/:id */
  updateEndpoint(id: string, changes: { url?: string; events?: string[]; enabled?: boolean }): Promise<EndpointView> {
    return this.adminJson(`/admin/webhooks/${id}`, { method: "PATCH", body: JSON.stringify(changes) });
  }

  /** POST /admin/webhooks/:id/rotate-secret: the endpoint with its new secret. */
  rotateEndpointSecret(id: string): Promise<EndpointView> {
    return this.adminJson(`/admin/webhooks/${id}/rotate-secret`, { method: "POST" });
  }

  /** GET /api/orders: the token's user's orders, newest first, a page at a time. */
  myOrders(token: string, cursor?: string): Promise<ApiResult<BuyerOrderPage>> {
    const query = cursor === undefined ? "" : `?cursor=${encodeURIComponent(cursor)}`;
    return this.result(`/api/orders${query}`, { headers: { Authorization: `Bearer ${token}` } });
  }

  /** GET /admin/sales/:saleId/orders with the given status, cursor and limit. */
  saleOrders(saleId: string, query: { status?: string; cursor?: string; limit?: number } = {}): Promise<AdminOrderPage> {
    const params = new URLSearchParams(Object.entries(query).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)]])));
    return this.adminJson(`/admin/sales/${saleId}/orders${params.size > 0 ? `?${params}` : ""}`);
  }

  /** GET /admin/sales/:saleId/orders.csv: the response, for its body to be read as a stream. */
  saleOrdersCsv(saleId: string, status?: string): Promise<Response> {
    return this.admin(`/admin/sales/${saleId}/orders.csv${status ? `?status=${status}` : ""}`);
  }

  /** POST /admin/scheduled: the cron's run, now (only where LOOPBACK_HOSTS_ONLY=true, as npm start runs the Worker). */
  runScheduled(): Promise<ApiResult<never>> {
    return this.adminResult("/admin/scheduled", { method: "POST" });
  }

  /** GET /admin/sales/:saleId/funnel: the sale's funnel per second (Workers Analytics Engine, or its local stand-in). */
  saleFunnel(saleId: string): Promise<ApiResult<FunnelSeries>> {
    return this.adminResult(`/admin/sales/${saleId}/funnel`, {});
  }

  /** GET /admin/funnel: every sale's funnel over the last week. */
  salesFunnel(): Promise<ApiResult<SalesFunnel>> {
    return this.adminResult("/admin/funnel", {});
  }

  /** GET /admin/orders/:orderId: the order with its history, payments and deliveries. */
  orderDetail(orderId: string): Promise<ApiResult<AdminOrderDetail>> {
    return this.adminResult(`/admin/orders/${orderId}`, {});
  }

  /** A call whose answer is read either way: the body, or the error's code. */
  private async result<T>(path: string, init: RequestInit): Promise<ApiResult<T>> {
    return this.resultOf<T>(await this.options.fetch(path, init));
  }

  private async adminResult<T>(path: string, init: RequestInit): Promise<ApiResult<T>> {
    return this.resultOf<T>(await this.admin(path, init));
  }

  private async resultOf<T>(res: Response): Promise<ApiResult<T>> {
    const body = (await res.json().catch(() => undefined)) as (T & Partial<ErrorBody>) | undefined;
    return {
      status: res.status,
      body: res.ok ? body : undefined,
      code: body?.error?.code,
      message: body?.error?.message,
      headers: res.headers,
    };
  }

  /** `objectHopMs`: an emulated round trip the durable-object copies wait on each RPC. */
  async createLabSale(stock: number, { objectHopMs = 0 } = {}): Promise<string> {
    const body = JSON.stringify({ stock, objectHopMs });
    return (await this.adminJson<{ id: string }>("/lab/sales", { method: "POST", body })).id;
  }

  /** POST /lab/read-path: page views with some cache guards off, D1's queries counted. */
  labReadPath(experiment: z.input<typeof ReadPathExperimentBody>): Promise<ReadPathFigures> {
    return this.adminJson<ReadPathFigures>("/lab/read-path", { method: "POST", body: JSON.stringify(experiment) });
  }

  labReport(labSaleId: string): Promise<LabSaleReport> {
    return this.adminJson<LabSaleReport>(`/lab/sales/${labSaleId}/report`);
  }

  labCheckout(strategy: StrategyName, labSaleId: string, token: string): Promise<Answer> {
    return this.answer(labCheckoutPath(strategy, labSaleId), token);
  }

  /** GET /lab/sales/:saleId/queue/stream: the buyer's standing as server-sent events (the response, to read as it streams). */
  labQueueStream(saleId: string, token: string, ticket: string, signal?: AbortSignal): Promise<Response> {
    return this.options.fetch(`/lab/sales/${saleId}/queue/stream`, {
      headers: { Authorization: `Bearer ${token}`, "Queue-Ticket": ticket, Accept: "text/event-stream" },
      signal,
    });
  }

  private async answer(path: string, token: string, body?: string, headers: Record<string, string> = {}): Promise<Answer> {
    let res: Response;
    try {
      res = await this.options.fetch(path, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}`, ...(body && { "Content-Type": "application/json" }), ...headers },
        body,
      });
    } catch {
      return { status: 0, code: "NETWORK_ERROR" };
    }
    return answerOf(res);
  }
}
