import { Hono } from "hono";
import type { AppEnv } from "../http/app-env";
import type { Health } from "../shared/api-types";

/** GET /healthz: the Worker answers (and its settings parse: the app's chain reads them first). */
export const healthRoutes = new Hono<AppEnv>().get("/healthz", (c) => c.json({ ok: true } satisfies Health));
