// Pub/sub over server-sent events, with the real client's subscribe()/psubscribe().

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../../dev/lib/wait.ts";
import { connectionsNamed, type GatewayFixture, startGatewayFixture, TOKEN } from "./gateway-fixture.ts";

let fixture: GatewayFixture;

beforeAll(async () => {
  fixture = await startGatewayFixture();
});
afterAll(() => fixture.stop());

const subscribers = () => connectionsNamed(fixture.direct, "gateway-subscriber");

describe("subscribe", () => {
  it("delivers published messages and releases the Redis connection after unsubscribe", async () => {
    expect(await subscribers()).toBe(0);
    const subscriber = fixture.client.subscribe<{ sku: string; qty: number }>("orders");
    const counts: number[] = [];
    const messages: unknown[] = [];
    subscriber.on("subscribe", (count) => counts.push(count));
    subscriber.on("message", (event) => messages.push(event));
    await eventually("the subscription to settle", async () => (await subscribers()) === 1 && counts.length === 1);
    expect(counts).toEqual([1]);

    expect(await fixture.client.publish("orders", { sku: "shoe", qty: 2 })).toBe(1);
    expect(await fixture.client.publish("orders", "héllo 🎉")).toBe(1);
    await eventually("the subscription to settle", async () => messages.length === 2);
    expect(messages).toEqual([
      { channel: "orders", message: { sku: "shoe", qty: 2 } },
      { channel: "orders", message: "héllo 🎉" },
    ]);

    await subscriber.unsubscribe();
    await eventually("the subscription to settle", async () => (await subscribers()) === 0);
    expect(await fixture.client.publish("orders", "nobody")).toBe(0);
  });

  it("psubscribe delivers pattern messages", async () => {
    const subscriber = fixture.client.psubscribe<{ title: string }>("news.*");
    try {
      const events: unknown[] = [];
      subscriber.on("pmessage", (event) => events.push(event));
      await eventually("the subscription to settle", async () => Number(await fixture.direct.pubsub("NUMPAT")) === 1);
      // The client JSON-parses pmessage payloads without a fallback, so publish JSON.
      expect(await fixture.client.publish("news.tech", { title: "gateway shipped" })).toBe(1);
      expect(await fixture.client.publish("sports", { title: "ignored" })).toBe(0);
      await eventually("the subscription to settle", async () => events.length === 1);
      expect(events).toEqual([{ pattern: "news.*", channel: "news.tech", message: { title: "gateway shipped" } }]);
    } finally {
      await subscriber.unsubscribe();
    }
    await eventually("the subscription to settle", async () => (await subscribers()) === 0);
  });

  it("streams the SSE shape: one confirmation per channel, payloads as text", async () => {
    const abort = new AbortController();
    const res = await fetch(`${fixture.gateway.url}/subscribe/a%2Fb/plain`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, accept: "text/event-stream" },
      body: "[]",
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("upstash-sync-token")).toBeTruthy();
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = "";
    const readUntil = async (needle: string) => {
      while (!text.includes(needle)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${needle}`);
        text += decoder.decode(value, { stream: true });
      }
    };
    await readUntil("subscribe,plain,2");
    await fixture.direct.publish("a/b", "x,y");
    await readUntil("message,a/b,x,y");
    expect(text).toBe("data: subscribe,a/b,1\n\ndata: subscribe,plain,2\n\ndata: message,a/b,x,y\n\n");
    abort.abort();
    await eventually("the subscription to settle", async () => (await subscribers()) === 0);
  });
});
