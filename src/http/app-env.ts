import type { Context } from "hono";
import type { KeepAlive } from "../isolate/shared-work";

/** What requireUser (src/http/auth.ts) sets: the verified caller. */
type UserVariables = { userId: string };

/** Hono's environment for every route of the Worker. */
export type AppEnv = { Bindings: Env; Variables: UserVariables };

/** The request's waitUntil, as work shared inside the isolate takes it (src/isolate/shared-work.ts). */
export const keepAliveOf =
  (c: Context<AppEnv>): KeepAlive =>
  (work) =>
    c.executionCtx.waitUntil(work);
