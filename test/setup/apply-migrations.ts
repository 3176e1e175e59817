const t0 = Date.now();
const { applyD1Migrations, env } = await import("cloudflare:test");
const t1 = Date.now();
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
console.log("TIMING import", t1 - t0, "migrations", Date.now() - t1);
