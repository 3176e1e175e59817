import { Hono } from "hono";
import { readTicket, signPass, signTicket } from "../admission/signed-claims";
import { joinQueue, type Progress, readProgress, recordedSale, standing } from "../admission/waiting-room";
import { type AppEnv, keepAliveOf } from "../http/app-env";
import { requireUser } from "../http/auth";
import { limitPerUser } from "../http/caller-limits";
import { ApiError, notFound, unavailable } from "../http/errors";
import { validate } from "../http/validate";
import type { KeepAlive } from "../isolate/shared-work";
import { redisFor } from "../redis/client";
import { bucketCount } from "../sales/buckets";
import type { Sale } from "../sales/sale";
import type { QueueJoined, QueuePosition } from "../shared/api-types";
import { log } from "../shared/log";
import { estimatedPlace } from "../shared/queue-draw";
import { QueueTicketHeader, SaleIdParam } from "../shared/requests";

/** Redis or D1 unreachable: 503, nothing joined (a join again later keeps the same place). */
async function orUnavailable<T>(saleId: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ApiError) throw err;
    log.warn("queue: redis or D1 unavailable", { saleId }, err);
    throw unavailable("the waiting room cannot be reached right now; try again shortly");
  }
}

const queueOff = () => new ApiError(409, "QUEUE_OFF", "this sale has no waiting room: check out directly");

async function queuedSale(db: D1Database, saleId: string, keepAlive: KeepAlive): Promise<Sale> {
  const sale = await recordedSale(db, saleId, keepAlive);
  if (!sale) throw notFound("SALE_NOT_FOUND", "no such sale");
  if (sale.queue.mode === "off") throw queueOff();
  return sale;
}

/** The buyer's place (joining if need be): the ticket to poll with. */
async function join(env: Env, sale: Sale, userId: string): Promise<{ ticket: string; place: number | null }> {
  const joined = await joinQueue(redisFor(env), sale, userId);
  switch (joined.code) {
    case "JOINED": {
      // An undrawn ticket carries the buyer's draw key: polls estimate its standing from it.
      const claims = {
        s: sale.id,
        u: userId,
        p: joined.place,
        ...(joined.place === null && joined.drawKey && { d: joined.drawKey }),
      };
      return { ticket: await signTicket(env.JWT_SECRET, claims), place: joined.place };
    }
    case "QUEUE_NOT_OPEN":
      throw new ApiError(409, "QUEUE_NOT_OPEN", `joining opens ${sale.queue.prequeueSec} s before the sale starts`);
    case "QUEUE_OFF":
      throw queueOff();
    case "QUEUE_CLOSED":
      return { ticket: await signTicket(env.JWT_SECRET, { s: sale.id, u: userId, p: null }), place: null };
    case "SALE_NOT_FOUND":
      log.error("queue: the sale exists in D1 but not in Redis", { saleId: sale.id });
      throw unavailable("the sale is temporarily unavailable", 30);
  }
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
    pass: pass && (await signPass(env.JWT_SECRET, { s: saleId, u: userId, p: pass.place, e: pass.expiresAt })),
    passExpiresAt: pass && new Date(pass.expiresAt).toISOString(),
  };
}

/**
 * The waiting room: POST /api/sales/:saleId/queue joins, GET polls with the ticket. Admission
 * checks that must run before a buyer joins (a human check, global limits) go in the join's
 * middleware chain, after requireUser.
 */
export const queueRoutes = new Hono<AppEnv>()
  .post("/:saleId/queue", validate("param", SaleIdParam), requireUser, limitPerUser, async (c) => {
    const { saleId } = c.req.valid("param");
    const userId = c.get("userId");
    const answer = await orUnavailable(saleId, async () => {
      const sale = await queuedSale(c.env.DB, saleId, keepAliveOf(c));
      const { ticket, place } = await join(c.env, sale, userId);
      const { state, retryAfterSec } = await position(
        c.env,
        saleId,
        sale.buckets,
        userId,
        place,
        await readProgress(redisFor(c.env), saleId, sale.buckets, keepAliveOf(c)),
      );
      return { ticket, place, state, retryAfterSec } satisfies QueueJoined;
    });
    return c.json(answer);
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
      const ticket = await readTicket(c.env.JWT_SECRET, c.req.valid("header")["queue-ticket"], saleId, userId);
      if (!ticket) throw new ApiError(403, "QUEUE_TICKET_INVALID", "this Queue-Ticket is not one this sale gave you");
      const answer = await orUnavailable(saleId, async () => {
        // The sale's bucket count: read from D1 once per isolate while it is kept (src/sales/buckets.ts).
        const buckets = await bucketCount(c.env.DB, saleId);
        const progress = await readProgress(redisFor(c.env), saleId, buckets, keepAliveOf(c));
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
