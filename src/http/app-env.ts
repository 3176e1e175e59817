import type { UserVariables } from "./auth";

/** Hono's environment for every route of the Worker. */
export type AppEnv = { Bindings: Env; Variables: UserVariables };
