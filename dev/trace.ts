// npm run trace -- <orderId>: one order's path through the local stack (npm start), with
// times: the request's log line, its reservation in Redis (the time its id was minted), the
// consumer's line when its queue message settled it in D1, and every state change D1 recorded
// since, all found by the order's traceparent. The order id may be the public one a buyer was
// given or the internal one the logs and D1 keep. Reads npm start's state directory (its
// secrets, the Worker's kept log lines) and asks its Worker for the order with the admin token.
import { decodeOrderId } from "../src/shared/order-id.ts";
import { traceIdOf } from "../src/shared/trace.ts";
import { ApiClient } from "./lib/api-client.ts";
import { orderIdCipher } from "./lib/order-ids.ts";
import { ROOT } from "./lib/project.ts";
import { localSecrets, stateDir } from "./stack/local-secrets.ts";
import { readWorkerLog, workerLogFile } from "./stack/worker-log.ts";

const [orderArg] = process.argv.slice(2);
if (!orderArg || !/^\d{1,20}$/.test(orderArg)) {
  console.error("usage: npm run trace -- <orderId> (the public id a buyer was given, or the internal one)");
  process.exit(2);
}

const state = stateDir(ROOT);
const secrets = localSecrets(state);
const ids = orderIdCipher(secrets.ORDER_ID_KEY);
const internal = ids.toInternal(orderArg);
const base = `http://127.0.0.1:${process.env.WORKER_PORT ?? 8787}`;
const api = new ApiClient({
  fetch: (path, init) => fetch(`${base}${path}`, init),
  adminToken: secrets.ADMIN_TOKEN,
  jwtSecret: secrets.JWT_SECRET,
});

const detail = await api.orderDetail(ids.toPublic(internal)).catch((err: unknown) => {
  console.error(`the local stack does not answer at ${base} (npm start): ${err instanceof Error ? err.message : err}`);
  process.exit(1);
});
if (!detail.body) {
  console.error(`no order ${orderArg} in the local stack's D1 (${detail.status} ${detail.code})`);
  process.exit(1);
}
const order = detail.body;
const traceId = order.traceparent ? traceIdOf(order.traceparent) : undefined;

/** One step of the path: when, where, what. */
interface Step {
  at: string;
  where: string;
  what: string;
}
const steps: Step[] = [];

const logFile = workerLogFile(state);
const lines = readWorkerLog(logFile);
for (const line of lines) {
  if ((traceId === undefined || line.traceId !== traceId) && line.orderId !== internal) continue;
  const where = line.message.startsWith("settlement:") ? "queue -> D1" : "request";
  steps.push({ at: line.at, where, what: `${line.level} ${line.message}` });
}
steps.push({
  at: new Date(decodeOrderId(internal).unixMs).toISOString(),
  where: "Redis",
  what: "reserved (lua/checkout.lua minted the id)",
});
for (const event of order.history) steps.push({ at: event.at, where: "D1", what: event.type });
// Log lines are stamped when they reach the log, so lines of one chunk share a millisecond: in a
// tie the reservation comes first (the request's line follows it), and the settlement last.
const STAGES = ["Redis", "request", "D1", "queue -> D1"];
steps.sort((a, b) => a.at.localeCompare(b.at) || STAGES.indexOf(a.where) - STAGES.indexOf(b.where));

console.log(`order ${ids.toPublic(internal)} (internal ${internal}), sale ${order.saleId}, ${order.status}`);
console.log(`traceparent ${order.traceparent ?? "none (settled before traces were kept)"}`);
for (const step of steps) console.log(`  ${step.at}  ${step.where.padEnd(11)}  ${step.what}`);
if (lines.length === 0) console.log(`  (no Worker log lines kept in ${logFile}: npm start keeps them)`);
