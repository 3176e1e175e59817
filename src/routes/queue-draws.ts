import { type Context, Hono } from "hono";
import { readQueueDraw } from "../admission/queue-draw-run";
import { publishedPlaces, queueDrawView } from "../admission/queue-draw-views";
import { type AppEnv, keepAliveOf } from "../http/app-env";
import { ApiError, orUnavailable } from "../http/errors";
import { validate } from "../http/validate";
import { knownSale } from "../sales/known-sales";
import type { Sale } from "../sales/sale";
import { QueueDrawPlacesQuery, SaleIdParam } from "../shared/requests";

/** What a 503 says when D1 cannot be reached: nothing changed. */
const UNREACHABLE = "the waiting room's draw cannot be reached right now; try again shortly";

/** The sale, whose waiting room must be random. */
async function randomSale(c: Context<AppEnv>, saleId: string): Promise<Sale> {
  const sale = await orUnavailable(UNREACHABLE, { saleId }, () => knownSale(c.env.DB, saleId, keepAliveOf(c)));
  if (!sale) throw new ApiError("SALE_NOT_FOUND");
  if (sale.queue.mode !== "random") throw new ApiError("QUEUE_NOT_RANDOM");
  return sale;
}

/**
 * A random sale's pre-queue as anyone may check it (docs/api.md, "Verifying a draw"): once the
 * sale is over, every place with its holder's draw key and the Merkle root over them, which the
 * first read (or the cron) starts publishing. `npm run verify-queue` reads these two alone.
 */
export const queueDrawRoutes = new Hono<AppEnv>()
  .get("/:saleId/queue/draw", validate("param", SaleIdParam), async (c) => {
    const { saleId } = c.req.valid("param");
    const sale = await randomSale(c, saleId);
    const run = await orUnavailable(UNREACHABLE, { saleId }, () => readQueueDraw(c.env.DB, c.env.JOBS, sale));
    c.header("Cache-Control", "public, max-age=1");
    return c.json(queueDrawView(sale, run));
  })
  .get("/:saleId/queue/draw/places", validate("param", SaleIdParam), validate("query", QueueDrawPlacesQuery), async (c) => {
    const { saleId } = c.req.valid("param");
    const sale = await randomSale(c, saleId);
    const cursor = Number(c.req.valid("query").cursor ?? 0);
    const page = await orUnavailable(UNREACHABLE, { saleId }, async () => {
      const run = await readQueueDraw(c.env.DB, c.env.JOBS, sale);
      return run?.phase === "ready" ? publishedPlaces(c.env.DB, run, cursor) : undefined;
    });
    if (!page) throw new ApiError("QUEUE_DRAW_PENDING");
    c.header("Cache-Control", "public, max-age=1");
    return c.json(page);
  });
