import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { decodeOrderId } from "../../src/shared/order-id";
import { PUBLIC_ORDER_ID_FLOOR } from "../../src/shared/public-order-id";
import {
  api,
  BASE,
  bearer,
  checkout,
  createSale,
  fetchWithVars,
  internalId,
  remaining,
  userToken,
  waitForConfirmed,
} from "./helpers";

/** A reference as people read it: eight characters of Crockford's base32 (no I, L, O, U) in two groups. */
const REFERENCE = /^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/;

const getOrder = async (orderId: string, userId: string) =>
  SELF.fetch(`${BASE}/api/orders/${orderId}`, { headers: bearer(await userToken(userId)) });

describe("order status", () => {
  it("shows the owner pending then confirmed, and hides it from anyone else", async () => {
    const sale = await createSale({ stock: 2 });
    const res = await checkout(sale.id, await userToken("owner"));
    const { orderId } = (await res.json()) as { orderId: string };

    const first = await getOrder(orderId, "owner");
    expect(first.status).toBe(200);
    expect(["pending", "confirmed"]).toContain(((await first.json()) as { status: string }).status);

    const stranger = await getOrder(orderId, "stranger");
    expect(stranger.status).toBe(404);
    expect(await stranger.json()).toEqual({ error: { code: "ORDER_NOT_FOUND", message: expect.any(String) } });

    await waitForConfirmed([orderId]);
    expect(await (await getOrder(orderId, "owner")).json()).toEqual({
      orderId,
      reference: expect.stringMatching(REFERENCE),
      saleId: sale.id,
      saleName: sale.name,
      variantLabel: null,
      userId: "owner",
      status: "confirmed",
      variant: "default",
      quantity: 1,
      amount: 0,
      currency: "USD",
      expiresAt: null,
      refundDue: false,
      failureReason: null,
    });
    expect((await getOrder(orderId, "stranger")).status).toBe(404);
  });

  it("400s a malformed id, 404s an unknown one, 401s without a token", async () => {
    expect((await getOrder("12ab", "x")).status).toBe(400);
    expect((await getOrder("99999999999999999999", "x")).status).toBe(400);
    expect((await getOrder("123456789012345678", "x")).status).toBe(404);
    expect((await SELF.fetch(`${BASE}/api/orders/123`)).status).toBe(401);
  });

  it("answers an unknown public id 404, and a malformed key of public ids 503 before reserving anything", async () => {
    expect((await getOrder("18446744073709551615", "x")).status).toBe(404);
    const sale = await createSale({ stock: 1 });
    const refused = await fetchWithVars({ ORDER_ID_KEY: "" }, `/api/sales/${sale.id}/checkout`, {
      method: "POST",
      headers: bearer(await userToken("keyless")),
    });
    expect(refused.status).toBe(503);
    expect(await remaining(sale.id)).toBe(1);
  });
});

describe("order ids that tell nothing", () => {
  it("gives consecutive orders public ids that are neither ordered nor near each other, while the internal ones are", async () => {
    const sale = await createSale({ stock: 8 });
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push((await api.checkout(sale.id, await userToken(`seq-${i}`))).orderId as string);
    const internal = ids.map(internalId);
    // What the ids would tell without the cipher: one slot, ascending, minted within moments of each other.
    const parts = internal.map(decodeOrderId);
    expect(new Set(parts.map((p) => p.slot)).size).toBe(1);
    expect(internal.map(BigInt)).toEqual(internal.map(BigInt).sort((a, b) => (a < b ? -1 : 1)));
    // The public ones: above 2^63, and any two a whole random distance apart (2^40 or less: about one chance in 4 million).
    for (const id of ids) expect(BigInt(id) >= PUBLIC_ORDER_ID_FLOOR).toBe(true);
    for (let i = 1; i < ids.length; i++) {
      const gap = BigInt(ids[i] as string) - BigInt(ids[i - 1] as string);
      expect(gap < 0n ? -gap : gap).toBeGreaterThan(1n << 40n);
    }
    const ascending = ids.every((id, i) => i === 0 || BigInt(id) > BigInt(ids[i - 1] as string));
    const descending = ids.every((id, i) => i === 0 || BigInt(id) < BigInt(ids[i - 1] as string));
    expect(ascending || descending).toBe(false);
  });

  it("resolves an internal id a client got before public ids, everywhere an order id enters", async () => {
    const sale = await createSale({ stock: 2, price: 300, paymentWindowSec: 600 });
    const token = await userToken("old-client");
    const { orderId } = (await api.checkout(sale.id, token)) as { orderId: string };
    const old = internalId(orderId);
    expect(old).not.toBe(orderId);
    await waitForConfirmed([orderId]);
    // The buyer's routes and the admin's take it and answer with the public id.
    expect(await (await getOrder(old, "old-client")).json()).toMatchObject({ orderId, status: "awaiting_payment" });
    expect((await api.orderDetail(old)).body).toMatchObject({ orderId });
    const cancelled = await api.cancel(old, token);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ orderId, status: "cancelled" });
  });

  it("names the buyer's latest order by its public id when they are at their limit, and a retry keeps its id", async () => {
    const sale = await createSale({ stock: 5 });
    const token = await userToken("limit-buyer");
    const withKey = async () =>
      (await (await checkout(sale.id, token, { headers: { "Idempotency-Key": "once" } })).json()) as { orderId: string };
    const first = await withKey();
    expect((await withKey()).orderId).toBe(first.orderId);
    const refused = await checkout(sale.id, token);
    expect(refused.status).toBe(409);
    const { error } = (await refused.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("ALREADY_PURCHASED");
    expect(error.message).toContain(`your latest order: ${first.orderId}`);
    expect(error.message).not.toContain(internalId(first.orderId));
  });
});
