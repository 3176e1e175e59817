import { type Context, Hono } from "hono";
import { type AppEnv, keepAliveOf } from "../http/app-env";
import { ApiError, orUnavailable } from "../http/errors";
import { signingSecret } from "../http/secrets";
import { validate } from "../http/validate";
import { redisFor } from "../redis/client";
import { type CatalogDeps, readCatalogPage, readSalePage } from "../sales/catalog";
import { signCursor, verifyCursor } from "../sales/cursors";
import { saleView } from "../sales/sale";
import type { CatalogPage } from "../shared/api-types";
import { CatalogQuery, SaleIdParam } from "../shared/requests";

// Reads fail as 503 when Redis or D1 cannot be reached; a page is never made up.

const depsOf = (c: Context<AppEnv>): CatalogDeps => ({ db: c.env.DB, redis: redisFor(c.env), waitUntil: keepAliveOf(c) });

/** The storefront's reads: cached (src/sales/catalog.ts), with live remaining stock. Edges may keep them a second. */
export const saleRoutes = new Hono<AppEnv>()
  // GET /api/sales: upcoming and live sales by start, CATALOG_PAGE_SIZE a page.
  .get("/", validate("query", CatalogQuery), async (c) => {
    const { cursor: text } = c.req.valid("query");
    // Cursors are signed with JWT_SECRET (labelled apart from tokens): no secret, no catalog.
    const secret = signingSecret(c.env, "the catalog cannot be paged");
    const cursor = text === undefined ? undefined : await verifyCursor(text, secret);
    // Checked before any cache or database is touched: a forged cursor costs nothing but this.
    if (text !== undefined && !cursor) throw new ApiError("INVALID_CURSOR");
    const page = await orUnavailable("the catalog cannot be read right now", {}, () => readCatalogPage(depsOf(c), cursor));
    const now = Date.now();
    c.header("Cache-Control", "public, max-age=1");
    return c.json({
      sales: page.sales.map(({ sale, remaining }) => saleView(sale, remaining, now)),
      nextCursor: page.next ? await signCursor(page.next, secret) : null,
    } satisfies CatalogPage);
  })
  // GET /api/sales/:saleId: the sale page.
  .get("/:saleId", validate("param", SaleIdParam), async (c) => {
    const { saleId } = c.req.valid("param");
    const page = await orUnavailable("the sale cannot be read right now", { saleId }, () => readSalePage(depsOf(c), saleId));
    if (!page) throw new ApiError("SALE_NOT_FOUND");
    c.header("Cache-Control", "public, max-age=1");
    return c.json(saleView(page.sale, page.remaining, Date.now()));
  });
