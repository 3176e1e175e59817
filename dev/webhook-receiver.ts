// npm run webhook-receiver: a shop's backend in a few lines, to see order events flow locally.
// Listens on 127.0.0.1 (PORT, default 8790), verifies each request's Standard Webhooks
// signature with the endpoint's secret (WEBHOOK_SECRET, or the file `npm start --webhook-url`
// wrote in the state directory, read on every request so either may start first), prints the
// event and answers 204; a request whose signature does not verify gets 400.
//
//   npm start -- --webhook-url http://127.0.0.1:8790/   (registers the endpoint, all events)
//   npm run webhook-receiver
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { Webhook } from "standardwebhooks";
import { ROOT } from "./lib/project.ts";
import { webhookSecretFile } from "./lib/webhook-secret-file.ts";
import { stateDir } from "./stack/local-secrets.ts";

const PORT = Number(process.env.PORT ?? 8790);

function secret(): string | undefined {
  if (process.env.WEBHOOK_SECRET) return process.env.WEBHOOK_SECRET;
  try {
    return readFileSync(webhookSecretFile(stateDir(ROOT)), "utf8").trim();
  } catch {
    return undefined;
  }
}

interface OrderEvent {
  id: string;
  type: string;
  createdAt: string;
  data: {
    order?: { orderId: string; userId: string; status: string; amount: number; currency: string };
    sale?: { saleId: string };
  };
}

const server = createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const payload = Buffer.concat(chunks).toString("utf8");
  const key = secret();
  if (!key) {
    console.warn("no secret: set WEBHOOK_SECRET or start the stack with --webhook-url");
    res.writeHead(503).end();
    return;
  }
  let event: OrderEvent;
  try {
    event = new Webhook(key).verify(payload, req.headers as Record<string, string>) as OrderEvent;
  } catch (err) {
    console.warn(`refused a request: ${err instanceof Error ? err.message : err}`);
    res.writeHead(400).end();
    return;
  }
  const { order, sale } = event.data;
  const what = order
    ? `order ${order.orderId} of ${order.userId}: ${order.status}, ${order.amount} ${order.currency}`
    : `sale ${sale?.saleId}`;
  console.log(`${event.createdAt}  ${event.type.padEnd(22)} ${what}  (${event.id})`);
  res.writeHead(204).end();
});

server.listen(PORT, "127.0.0.1", () => console.log(`Receiving order events on http://127.0.0.1:${PORT}/ (signatures verified)`));
