import { type Context, Hono } from "hono";
import { lineNamed } from "../admission/lane-lines";
import { readQueueDraw } from "../admission/queue-draw-run";
import { publishedPlaces, queueDrawView } from "../admission/queue-draw-views";
import { type AppEnv, keepAliveOf } from "../http/app-env";
import { ApiError, orUnavailable } from "../http/errors";
import { validate } from "../http/validate";
import { knownSale } from "../sales/known-sales";
import type { Sale } from "../sales/sale";
import type { Line } from "../shared/keys";
import { QueueDrawPlacesQuery, QueueLineQuery, SaleIdParam } from "../shared/requests";

/** What a 503 says when D1 cannot be reached: nothing changed. */
const UNREACHABLE = "the waiting room's draw cannot be reached right now; try again shortly";

/** The sale, whose waiting room must be random, and the line `lane` names (the public one without). */
async function randomLine(c: Context<AppEnv>, saleId: string, lane: string | undefined): Promise<{ sale: Sale; line: Line }> {
  const sale = await orUnavailable(UNREACHABLE, { saleId }, () => knownSale(c.env.DB, saleId, keepAliveOf(c)));
  if (!sale) throw new ApiError("SALE_NOT_FOUND");
  if (sale.queue.mode !== "random") throw new ApiError("QUEUE_NOT_RANDOM");
  const line = lineNamed(sale, lane);
  if (line === undefined) throw new ApiError("LANE_NOT_FOUND");
  return { sale, line };
}

/**
 * A random sale's pre-queue as anyone may check it (docs/api.md, "Verifying a draw"): once the
 * sale is over, every place with its holder's draw key and the Merkle root over them, which the
 * first read (or the cron) starts publishing; each line apart (?lane= a presale lane's own). `npm run verify-queue` reads these two alone.
 */
export const queueDrawRoutes = new Hono<AppEnv>()
  .get("/:saleId/queue/draw", validate("param", SaleIdParam), validate("query", QueueLineQuery), async (c) => {
    const { saleId } = c.req.valid("param");
    const { sale, line } = await randomLine(c, saleId, c.req.valid("query").lane);
    const run = await orUnavailable(UNREACHABLE, { saleId }, () => readQueueDraw(c.env.DB, c.env.JOBS, sale, line));
    c.header("Cache-Control", "public, max-age=1");
    return c.json(queueDrawView(sale, run));
  })
  .get("/:saleId/queue/draw/places", validate("param", SaleIdParam), validate("query", QueueDrawPlacesQuery), async (c) => {
    const { saleId } = c.req.valid("param");
    const { cursor: from, lane } = c.req.valid("query");
    const { sale, line } = await randomLine(c, saleId, lane);
    const cursor = Number(from ?? 0);
    const page = await orUnavailable(UNREACHABLE, { saleId }, async () => {
      const run = await readQueueDraw(c.env.DB, c.env.JOBS, sale, line);
      return run?.phase === "ready" ? publishedPlaces(c.env.DB, run, cursor) : undefined;
    });
    if (!page) throw new ApiError("QUEUE_DRAW_PENDING");
    c.header("Cache-Control", "public, max-age=1");
    return c.json(page);
  });
