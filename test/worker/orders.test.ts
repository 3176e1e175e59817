import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { BASE, bearer, checkout, createSale, userToken, waitForConfirmed } from "./helpers";

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
      saleId: sale.id,
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
});
