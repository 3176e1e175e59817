import { type Context, Hono } from "hono";
import { beyondAccountsPerAddress } from "../admission/accounts-per-address";
import { checkAdmission, losesQuietly } from "../admission/gate";
import { readTicket, signPass, signQuietTicket, signTicket, type TicketClaims } from "../admission/signed-claims";
import { joinWaitingRoom, type Progress, readProgress, standing } from "../admission/waiting-room";
import { countLocalRefusal } from "../checkout/local-outcomes";
import { type AppEnv, keepAliveOf } from "../http/app-env";
import { requireUser } from "../http/auth";
import { ApiError, orUnavailable, refusalResponse, unavailable } from "../http/errors";
import { limitGlobally, limitPerUser } from "../http/limits";
import { signingSecret } from "../http/secrets";
import { validate } from "../http/validate";
import type { KeepAlive } from "../isolate/shared-work";
import { redisFor } from "../redis/client";
import { bucketsOf, knownSale } from "../sales/known-sales";
import { type Sale, waitingRoomOpensAt } from "../sales/sale";
import type { QueueJoined, QueuePosition } from "../shared/api-types";
import { log } from "../shared/log";
import type { Refusal } from "../shared/refusal";
import { QueueTicketHeader, SaleIdParam } from "../shared/requests";
import { settingsOf } from "../shared/settings";
import { drawKey, estimatedPlace } from "../shared/waiting-room-draw";

/** What a 503 for an unusable JWT_SECRET names: tickets and passes are signed with it. */
const WAITING_ROOM = "the waiting room is not available";

/** Redis or D1 (or siteverify) unreachable: 503, nothing joined (a join again later keeps the same place). */
const UNREACHABLE = "the waiting room cannot be reached right now; try again shortly";

const queueOff = () => new ApiError("QUEUE_OFF", "this sale has no waiting room: check out directly");
const queueNotOpen = (sale: Sale) =>
  new ApiError("QUEUE_NOT_OPEN", `joining opens ${sale.queue.prequeueSec} s before the sale starts`);

async function queuedSale(db: D1Database, saleId: string, keepAlive: KeepAlive): Promise<Sale> {
  const sale = await knownSale(db, saleId, keepAlive);
  if (!sale) throw new ApiError("SALE_NOT_FOUND");
  if (sale.draw) throw new ApiError("DRAW_ONLY");
  if (sale.queue.mode === "off") throw queueOff();
  return sale;
}

/** The buyer's place (joining if need be): the ticket to poll with. */
async function join(env: Env, sale: Sale, userId: string): Promise<{ ticket: string; place: number | null }> {
  const joined = await joinWaitingRoom(redisFor(env), sale, userId);
  switch (joined.code) {
    case "JOINED": {
      // An undrawn ticket carries the buyer's draw key: polls estimate its standing from it.
      const claims = {
        s: sale.id,
        u: userId,
        p: joined.place,
        ...(joined.place === null && joined.drawKey && { d: joined.drawKey }),
      };
      return { ticket: await signTicket(signingSecret(env, WAITING_ROOM), claims), place: joined.place };
    }
    case "QUEUE_NOT_OPEN":
      throw queueNotOpen(sale);
    case "QUEUE_OFF":
      throw queueOff();
    case "QUEUE_CLOSED":
      return { ticket: await signTicket(signingSecret(env, WAITING_ROOM), { s: sale.id, u: userId, p: null }), place: null };
    case "SALE_NOT_FOUND":
      log.error("queue: the sale exists in D1 but not in Redis", { saleId: sale.id });
      throw unavailable("the sale is temporarily unavailable", 30);
  }
}

/**
 * Whether the caller joins, loses quietly (a deny rule, a token that did not pass, or one user
 * id too many from its address), or is asked openly for the Human-Check token it did not
 * send (the refusal). Those turned away are counted for the console.
 */
async function joinAdmission(c: Context<AppEnv>, sale: Sale, userId: string): Promise<"join" | "quiet" | Refusal> {
  const ip = c.req.header("CF-Connecting-IP");
  const keepAlive = keepAliveOf(c);
  const { turnedAway } = await checkAdmission(
    c.env.DB,
    {
      saleId: sale.id,
      caller: { ip, userId, userAgent: c.req.header("User-Agent") },
      humanCheckToken: c.req.header("Human-Check"),
      keepAlive,
      stage: "queue-join",
    },
    settingsOf(c.env),
  );
  const redis = redisFor(c.env);
  if (turnedAway) {
    countLocalRefusal(redis, sale.id, turnedAway.counted, keepAlive);
    return losesQuietly(turnedAway) ? "quiet" : turnedAway.refusal;
  }
  // One account, one seat: user ids from this address beyond the shop's number (off at 0).
  const ttlSeconds = Math.max(60, Math.ceil((sale.endsAt - Date.now()) / 1000));
  const limit = settingsOf(c.env).ACCOUNTS_PER_ADDRESS;
  if (!(await beyondAccountsPerAddress(redis, sale.id, ip, userId, { limit, ttlSeconds }))) return "join";
  countLocalRefusal(redis, sale.id, "DENIED", keepAlive);
  return "quiet";
}

/**
 * A quiet ticket: what a real join would have answered at this moment, as far as its holder
 * can see (a place behind the line's last, or a random sale's pre-queue draw key), without
 * joining. Costs no Redis command beyond the line's progress this isolate reads once a second.
 */
async function quietTicket(sale: Sale, userId: string, progress: Progress): Promise<TicketClaims> {
  const preQueueSeed = sale.queue.mode === "random" && progress.at < progress.startsAt ? sale.queue.seed : null;
  if (preQueueSeed) return { s: sale.id, u: userId, p: null, d: await drawKey(preQueueSeed, userId) };
  return { s: sale.id, u: userId, p: progress.joined + 1 };
}

/**
 * The poll's answer for a quiet ticket: its place always just behind the admitted ones (or
 * its estimate, or unplaced), so it waits until the sale is sold out or over. Never a Redis
 * command: a place beyond the admitted reads no pass record.
 */
async function quietPosition(
  env: Env,
  saleId: string,
  buckets: number,
  userId: string,
  ticket: TicketClaims,
  progress: Progress,
): Promise<QueuePosition> {
  const started = progress.at >= progress.startsAt && progress.state !== "missing";
  const place = ticket.p ?? (started && ticket.d ? (estimatedPlace(ticket.d, progress) ?? null) : null);
  const never = place === null ? null : Math.max(place, progress.admitted + 1);
  return { ...(await position(env, saleId, buckets, userId, never, progress)), place: ticket.p };
}

/** The poll's answer for the buyer at `place`, its pass signed when admitted. */
async function position(
  env: Env,
  saleId: string,
  buckets: number,
  userId: string,
  place: number | null,
  progress: Progress,
): Promise<QueuePosition> {
  const { pass, ...rest } = await standing(redisFor(env), saleId, buckets, userId, place, progress);
  return {
    ...rest,
    pass: pass && (await signPass(signingSecret(env, WAITING_ROOM), { s: saleId, u: userId, p: pass.place, e: pass.expiresAt })),
    passExpiresAt: pass && new Date(pass.expiresAt).toISOString(),
  };
}

/**
 * The waiting room: POST /api/sales/:saleId/queue joins, GET polls with the ticket. Before
 * a buyer joins: the isolate's and the global limits (middleware), then deny rules, the human
 * check and one account one seat (joinAdmission); a caller they turn away quietly is given a
 * quiet ticket, whose polls cost no Redis command and never come up.
 */
export const waitingRoomRoutes = new Hono<AppEnv>()
  .post("/:saleId/queue", validate("param", SaleIdParam), requireUser, limitPerUser, limitGlobally("queue-join"), async (c) => {
    const { saleId } = c.req.valid("param");
    const userId = c.get("userId");
    const answer = await orUnavailable(UNREACHABLE, { saleId }, async () => {
      const sale = await queuedSale(c.env.DB, saleId, keepAliveOf(c));
      // Before the checks: a token is not spent on a line that is not open yet.
      if (Date.now() < waitingRoomOpensAt(sale)) throw queueNotOpen(sale);
      const admission = await joinAdmission(c, sale, userId);
      if (typeof admission === "object") return admission;
      if (admission === "quiet") {
        const progress = await readProgress(redisFor(c.env), saleId, sale.buckets, keepAliveOf(c));
        const claims = await quietTicket(sale, userId, progress);
        const { state, retryAfterSec } = await quietPosition(c.env, saleId, sale.buckets, userId, claims, progress);
        return {
          ticket: await signQuietTicket(signingSecret(c.env, WAITING_ROOM), claims),
          place: claims.p,
          state,
          retryAfterSec,
        };
      }
      const { ticket, place } = await join(c.env, sale, userId);
      const progress = await readProgress(redisFor(c.env), saleId, sale.buckets, keepAliveOf(c));
      const { state, retryAfterSec } = await position(c.env, saleId, sale.buckets, userId, place, progress);
      return { ticket, place, state, retryAfterSec } satisfies QueueJoined;
    });
    return "code" in answer ? refusalResponse(c, answer) : c.json(answer satisfies QueueJoined);
  })
  // Costs no Redis command of its own: the place is in the ticket, the line's progress is
  // this isolate's read of the last second. A random sale's pre-queue ticket is placed once
  // after the start, when it nears the front (until then its standing is estimated from its
  // draw key); that answer carries the placed ticket in its Queue-Ticket header.
  .get(
    "/:saleId/queue",
    validate("param", SaleIdParam),
    validate("header", QueueTicketHeader),
    requireUser,
    limitPerUser,
    async (c) => {
      const { saleId } = c.req.valid("param");
      const userId = c.get("userId");
      const ticket = await readTicket(signingSecret(c.env, WAITING_ROOM), c.req.valid("header")["queue-ticket"], saleId, userId);
      if (!ticket) throw new ApiError("QUEUE_TICKET_INVALID");
      const answer = await orUnavailable(UNREACHABLE, { saleId }, async () => {
        // The sale's bucket count: read from D1 once per isolate while it is kept (src/sales/known-sales.ts).
        const buckets = bucketsOf(await knownSale(c.env.DB, saleId, keepAliveOf(c)));
        const progress = await readProgress(redisFor(c.env), saleId, buckets, keepAliveOf(c));
        if (ticket.quiet) return quietPosition(c.env, saleId, buckets, userId, ticket, progress);
        let place = ticket.p;
        const started = progress.at >= progress.startsAt && progress.state !== "missing";
        // Drawn, but far from the front: an estimate from the ticket's draw key, at no Redis cost.
        const estimate = place === null && started && ticket.d ? estimatedPlace(ticket.d, progress) : undefined;
        if (estimate !== undefined)
          return { ...(await position(c.env, saleId, buckets, userId, estimate, progress)), place: null };
        if (place === null && started) {
          const placed = await join(c.env, await queuedSale(c.env.DB, saleId, keepAliveOf(c)), userId);
          place = placed.place;
          if (place !== null) c.header("Queue-Ticket", placed.ticket);
        }
        return position(c.env, saleId, buckets, userId, place, progress);
      });
      return c.json(answer);
    },
  );
