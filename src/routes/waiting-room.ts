import { type Context, Hono } from "hono";
import { codeHash, readCode } from "../admission/access-codes";
import { beyondAccountsPerAddress } from "../admission/accounts-per-address";
import { laneOfCode } from "../admission/code-batches";
import { checkAdmission, losesQuietly } from "../admission/gate";
import { lineForJoin, openLaneLines } from "../admission/lane-lines";
import { lineClaim, queuePosition } from "../admission/queue-position";
import { readTicket, signTicket } from "../admission/signed-claims";
import { holdsPlace, type Joiner, joinWaitingRoom, lineRulesOf, readProgress } from "../admission/waiting-room";
import { countLocalRefusal } from "../checkout/local-outcomes";
import { type AppEnv, keepAliveOf } from "../http/app-env";
import { requireUser } from "../http/auth";
import { callerAddress, clientAddress } from "../http/client-address";
import { ApiError, orUnavailable, refusalResponse, unavailable } from "../http/errors";
import { countCodeFailure, limitGlobally, limitPerUser, refuseCodeGuesser } from "../http/limits";
import { signingSecret } from "../http/secrets";
import { validate } from "../http/validate";
import type { KeepAlive } from "../isolate/shared-work";
import { redisFor } from "../redis/client";
import { bucketSplitOf, knownSale } from "../sales/known-sales";
import { firstLineOpensAt, type Sale, waitingRoomOpensAt } from "../sales/sale";
import type { QueueJoined } from "../shared/api-types";
import { type BucketSplit, type JoinKind, type Line, PUBLIC_LINE } from "../shared/keys";
import { log } from "../shared/log";
import type { Refusal } from "../shared/refusal";
import { QueueTicketHeader, SaleIdParam } from "../shared/requests";
import { settingsOf } from "../shared/settings";
import { estimatedPlace } from "../shared/waiting-room-draw";
import type { Progress } from "../shared/waiting-room-progress";

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

/** The line's progress as this isolate last read it (readProgress), under the deployment's rules. */
const lineProgress = (c: Context<AppEnv>, saleId: string, buckets: number, line: Line) =>
  readProgress(redisFor(c.env), saleId, buckets, lineRulesOf(settingsOf(c.env)), keepAliveOf(c), line);

/** A ticket or pass's claim of the line it belongs to: none for the public line. */

/**
 * The buyer's place in a line (joining if need be, as a person or quietly): the ticket to poll
 * with. A quiet place is signed as any other: it is a place nobody else holds, whose pass buys
 * nothing (only Redis' record of it is marked), so its ticket needs no mark of its own. A code a lane's line refused as invalid counts
 * against the caller's allowance of such refusals.
 */
async function join(c: Context<AppEnv>, sale: Sale, joiner: Joiner): Promise<{ ticket: string; place: number | null }> {
  const { env } = c;
  const { userId, line } = joiner;
  const joined = await joinWaitingRoom(redisFor(env), sale, joiner, lineRulesOf(settingsOf(env)));
  switch (joined.code) {
    case "JOINED": {
      // An undrawn ticket carries the buyer's draw key: polls estimate its standing from it.
      const claims = {
        s: sale.id,
        u: userId,
        p: joined.place,
        ...(joined.place === null && joined.drawKey && { d: joined.drawKey }),
        ...lineClaim(line),
      };
      return { ticket: await signTicket(signingSecret(env, WAITING_ROOM), claims), place: joined.place };
    }
    case "QUEUE_NOT_OPEN":
      throw queueNotOpen(sale);
    case "QUEUE_OFF":
      throw queueOff();
    case "QUEUE_CLOSED": {
      const claims = { s: sale.id, u: userId, p: null, ...lineClaim(line) };
      return { ticket: await signTicket(signingSecret(env, WAITING_ROOM), claims), place: null };
    }
    case "ACCESS_CODE_INVALID":
      countCodeFailure(c, userId, keepAliveOf(c));
      throw new ApiError(joined.code);
    case "ACCESS_CODE_REQUIRED":
    case "ACCESS_CODE_USED":
      throw new ApiError(joined.code);
    case "SALE_NOT_FOUND":
      log.error("queue: the sale (or the line's lane) exists in D1 but not in Redis", { saleId: sale.id, line });
      throw unavailable("the sale is temporarily unavailable", 30);
  }
}

/**
 * Which line the caller joins, and with which code (docs/lanes.md, "Lanes with a waiting room"):
 * while lanes' lines are open the Access-Code decides (lineForJoin); its lane is looked up (one
 * HGET) only when more than one of them is open, to pick the one that takes it. A caller past
 * its allowance of refused codes is refused 429 first; a header that cannot be a code is
 * refused here and counted like any invalid one. Nothing is spent on a refusal.
 */
async function lineToJoin(
  c: Context<AppEnv>,
  sale: Sale,
  userId: string,
  now: number,
): Promise<Pick<Joiner, "line" | "codeHash">> {
  const header = c.req.header("Access-Code");
  const open = openLaneLines(sale, now);
  if (header === undefined || open.length === 0) {
    const line = lineForJoin(sale, undefined, now);
    if (line !== "ACCESS_CODE_REQUIRED") return { line };
    throw new ApiError(
      "ACCESS_CODE_REQUIRED",
      `only code holders join now: send your code in the Access-Code header, or join the public line from ${new Date(waitingRoomOpensAt(sale)).toISOString()}`,
    );
  }
  refuseCodeGuesser(c, userId);
  const code = readCode(header);
  if (code === undefined) {
    countCodeFailure(c, userId, keepAliveOf(c));
    throw new ApiError("ACCESS_CODE_INVALID");
  }
  const hash = await codeHash(sale.id, code);
  const lane = open.length > 1 ? await laneOfCode(redisFor(c.env), sale.id, hash) : undefined;
  return { line: lineForJoin(sale, { lane }, now) as Line, codeHash: hash };
}

/**
 * How the caller joins: as a person; quietly (a deny rule, a token that did not pass, or one
 * user id too many from its address); or not at all, asked openly for the Human-Check token it
 * did not send (the refusal). A buyer who holds a place already is answered that place before
 * anything is judged (its token is neither spent nor checked). Every caller costs the same
 * Redis commands whichever way it goes, so the answer's timing tells nothing: one round trip
 * for the place held and the address's seat together, then the join's script.
 */
async function joinAdmission(c: Context<AppEnv>, sale: Sale, userId: string, line: Line): Promise<JoinKind | Refusal> {
  const redis = redisFor(c.env);
  const keepAlive = keepAliveOf(c);
  const settings = settingsOf(c.env);
  const address = clientAddress(c);
  // One account, one seat, where no human check decides instead (docs/bots-and-limits.md).
  const seats = sale.humanCheck ? 0 : settings.ACCOUNTS_PER_ADDRESS;
  const ttlSeconds = Math.max(60, Math.ceil((sale.endsAt - Date.now()) / 1000));
  const [held, beyond] = await Promise.all([
    holdsPlace(redis, sale, userId, line),
    beyondAccountsPerAddress(redis, sale.id, address, userId, { limit: seats, ttlSeconds }),
  ]);
  if (held) return "person"; // the script answers the place held, of the kind it was given
  const { turnedAway } = await checkAdmission(
    c.env.DB,
    {
      saleId: sale.id,
      caller: { address: callerAddress(c), userId, userAgent: c.req.header("User-Agent") },
      humanCheckToken: c.req.header("Human-Check"),
      keepAlive,
      stage: "queue-join",
    },
    settings,
  );
  if (turnedAway) {
    countLocalRefusal(redis, sale.id, turnedAway.counted, keepAlive);
    return losesQuietly(turnedAway) ? "quiet" : turnedAway.refusal;
  }
  if (!beyond) return "person";
  countLocalRefusal(redis, sale.id, "DENIED", keepAlive);
  return "quiet";
}

/** The poll's answer for the buyer at `place` of `line`. */
const position = (
  env: Env,
  saleId: string,
  split: BucketSplit,
  userId: string,
  line: Line,
  place: number | null,
  progress: Progress,
) => queuePosition(redisFor(env), signingSecret(env, WAITING_ROOM), saleId, split, userId, line, place, progress);

/**
 * The waiting room: POST /api/sales/:saleId/queue joins, GET polls with the ticket. Before
 * a buyer joins: the isolate's and the global limits (middleware), then the place held, deny
 * rules, the human check and one account one seat (joinAdmission); a caller they turn away
 * quietly is given a place of its own whose pass buys nothing, and is answered, joining and
 * polling, as a person is: admitted at its turn, with a pass lua/checkout.lua refuses as sold out.
 */
export const waitingRoomRoutes = new Hono<AppEnv>()
  .post("/:saleId/queue", validate("param", SaleIdParam), requireUser, limitPerUser, limitGlobally("queue-join"), async (c) => {
    const { saleId } = c.req.valid("param");
    const userId = c.get("userId");
    const answer = await orUnavailable(UNREACHABLE, { saleId }, async () => {
      const sale = await queuedSale(c.env.DB, saleId, keepAliveOf(c));
      // Before the checks: a token is not spent on a line that is not open yet, or not the caller's to join.
      const now = Date.now();
      if (now < firstLineOpensAt(sale)) throw queueNotOpen(sale);
      const { line, codeHash } = await lineToJoin(c, sale, userId, now);
      const kind = await joinAdmission(c, sale, userId, line);
      if (typeof kind === "object") return kind;
      const { ticket, place } = await join(c, sale, { userId, kind, line, codeHash });
      const progress = await lineProgress(c, saleId, sale.buckets, line);
      const { state, retryAfterSec } = await position(c.env, saleId, bucketSplitOf(sale), userId, line, place, progress);
      return { ticket, place, state, retryAfterSec } satisfies QueueJoined;
    });
    return "code" in answer ? refusalResponse(c, answer) : c.json(answer satisfies QueueJoined);
  })
  // Costs no Redis command of its own: the place is in the ticket, the line's progress is
  // this isolate's read of the last second. A random sale's pre-queue ticket is placed once
  // after the start, when it nears the front (until then its standing is estimated from its
  // draw key); that answer carries the placed ticket in its Queue-Ticket header. A quiet
  // ticket goes the same way, and so does its pass at its turn: only Redis knows it buys nothing.
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
        // The sale's split: read from D1 once per isolate while it is kept (src/sales/known-sales.ts).
        const split = bucketSplitOf(await knownSale(c.env.DB, saleId, keepAliveOf(c)));
        const line = ticket.l ?? PUBLIC_LINE;
        const progress = await lineProgress(c, saleId, split.count, line);
        let place = ticket.p;
        const started = progress.at >= progress.startsAt && progress.state !== "missing";
        // Drawn, but far from the front: an estimate from the ticket's draw key, at no Redis cost.
        const estimate = place === null && started && ticket.d ? estimatedPlace(ticket.d, progress) : undefined;
        if (estimate !== undefined)
          return { ...(await position(c.env, saleId, split, userId, line, estimate, progress)), place: null };
        if (place === null && started) {
          // The place the buyer holds in the ticket's line: the join answers it before any code is asked for.
          const sale = await queuedSale(c.env.DB, saleId, keepAliveOf(c));
          const placed = await join(c, sale, { userId, kind: "person", line });
          place = placed.place;
          if (place !== null) c.header("Queue-Ticket", placed.ticket);
        }
        return position(c.env, saleId, split, userId, line, place, progress);
      });
      return c.json(answer);
    },
  );
