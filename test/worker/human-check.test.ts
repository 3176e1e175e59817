// Turnstile through the local siteverify stand-in (dev/turnstile/siteverify.ts, started by
// test/setup/global-setup.ts), with each of Cloudflare's published test secrets, which the
// Worker accepts only as the local stack runs it (loopback hosts only); and a deployment's
// configuration, which refuses them and checks the host name siteverify reports.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DUMMY_TOKEN, STAND_IN_HOSTNAME, STAND_IN_SECRET, standInToken, TEST_SECRETS } from "../../dev/turnstile/test-keys";
import { humanCheckAction } from "../../src/admission/human-check";
import { bucketKeys } from "../../src/shared/keys";
import { api, bearer, checkout, createSale, fetchAsLocalStack, fetchWithVars, redis, userToken } from "./helpers";

const tokenFor = (saleId: string) => standInToken(humanCheckAction(saleId));

const checkoutInit = async (userId: string, token: string | undefined): Promise<RequestInit> => ({
  method: "POST",
  headers: { ...bearer(await userToken(userId)), ...(token !== undefined && { "Human-Check": token }) },
});

/** A checkout with `token` in Human-Check (none when undefined), as the local stack serves it, `vars` over that. */
async function checkoutWith(saleId: string, userId: string, token: string | undefined, vars: Partial<Env> = {}) {
  return fetchAsLocalStack(vars, `/api/sales/${saleId}/checkout`, await checkoutInit(userId, token));
}

/** The same checkout on a deployment's configuration: a public host name, LOOPBACK_HOSTS_ONLY off. */
async function deployedCheckoutWith(saleId: string, userId: string, vars: Partial<Env>) {
  return fetchWithVars(vars, `/api/sales/${saleId}/checkout`, await checkoutInit(userId, tokenFor(saleId)));
}

async function expectRefused(res: Response, code: string): Promise<void> {
  expect(res.status).toBe(403);
  expect(((await res.json()) as { error: { code: string } }).error.code).toBe(code);
}

/** Units Redis handed out: the sale's buyers, by user id. */
async function buyers(saleId: string): Promise<string[]> {
  return (await redis.hkeys(bucketKeys(saleId, 0, 1).buyers)) as string[];
}

describe("the human check (Turnstile) on checkout of a sale with humanCheck", () => {
  it("is off by default and shown on the public sale when on", async () => {
    const plain = await createSale({ stock: 2 });
    expect(plain.humanCheck).toBe(false);
    expect((await checkout(plain.id, await userToken("hc-plain"))).status).toBe(202);

    const checked = await createSale({ stock: 2, humanCheck: true });
    expect(checked.humanCheck).toBe(true);
    expect((await api.sale(checked.id)).humanCheck).toBe(true);
  });

  it("asks for a token, and passes one siteverify vouches for with the sale's action (secret 1x…AA)", async () => {
    const sale = await createSale({ stock: 3, humanCheck: true });
    await expectRefused(await checkoutWith(sale.id, "hc-none", undefined), "HUMAN_CHECK_REQUIRED");
    await expectRefused(await checkoutWith(sale.id, "hc-blank", " "), "HUMAN_CHECK_REQUIRED");
    const passed = await checkoutWith(sale.id, "hc-pass", tokenFor(sale.id));
    expect(passed.status).toBe(202);
    expect(await buyers(sale.id)).toEqual(["hc-pass"]);
  });

  it("refuses a token siteverify fails (2x…AA) or calls spent (3x…AA), and sells nothing", async () => {
    const sale = await createSale({ stock: 3, humanCheck: true });
    for (const secret of [TEST_SECRETS.fails, TEST_SECRETS.spent, "not-a-secret-cloudflare-knows"]) {
      await expectRefused(
        await checkoutWith(sale.id, `hc-${secret.slice(0, 2)}`, tokenFor(sale.id), { TURNSTILE_SECRET_KEY: secret }),
        "HUMAN_CHECK_FAILED",
      );
    }
    // No secret configured: every token is refused (a deploy that forgot it fails closed).
    await expectRefused(
      await checkoutWith(sale.id, "hc-nosecret", tokenFor(sale.id), { TURNSTILE_SECRET_KEY: "" }),
      "HUMAN_CHECK_FAILED",
    );
    expect(await buyers(sale.id)).toEqual([]);
  });

  it("refuses a token minted for another sale's action, and Cloudflare's dummy token (no action)", async () => {
    const sale = await createSale({ stock: 3, humanCheck: true });
    const other = await createSale({ stock: 3, humanCheck: true });
    await expectRefused(await checkoutWith(sale.id, "hc-other", tokenFor(other.id)), "HUMAN_CHECK_FAILED");
    await expectRefused(await checkoutWith(sale.id, "hc-dummy", DUMMY_TOKEN), "HUMAN_CHECK_FAILED");
    expect(await buyers(sale.id)).toEqual([]);
  });

  it("accepts a token once: the same token again is refused, for its buyer or anyone else", async () => {
    const sale = await createSale({ stock: 3, humanCheck: true });
    const token = tokenFor(sale.id);
    expect((await checkoutWith(sale.id, "hc-once-a", token)).status).toBe(202);
    await expectRefused(await checkoutWith(sale.id, "hc-once-b", token), "HUMAN_CHECK_FAILED");
    await expectRefused(await checkoutWith(sale.id, "hc-once-a", token), "HUMAN_CHECK_FAILED");
    expect(await buyers(sale.id)).toEqual(["hc-once-a"]);
  });

  it("answers 503 when siteverify cannot be reached, sells nothing, and the token stays good", async () => {
    const sale = await createSale({ stock: 3, humanCheck: true });
    const token = tokenFor(sale.id);
    // A loopback port nothing listens on (port 9 is discard, closed here): a real refused connection.
    const down = await checkoutWith(sale.id, "hc-down", token, { TURNSTILE_VERIFY_URL: "http://127.0.0.1:9/siteverify" });
    expect(down.status).toBe(503);
    expect(down.headers.get("Retry-After")).toBe("1");
    expect(await buyers(sale.id)).toEqual([]);
    expect((await checkoutWith(sale.id, "hc-down", token)).status).toBe(202);
  });

  it("as deployed: refuses Cloudflare's test secrets, and a token solved on another host than the shop's", async () => {
    const sale = await createSale({ stock: 3, humanCheck: true });
    const shop = { TURNSTILE_HOSTNAMES: "shop.example, www.shop.example" };
    // The always-passing test secret vouches for anyone: refused unless the Worker serves loopback hosts only.
    await expectRefused(
      await deployedCheckoutWith(sale.id, "hc-deployed-test", { ...shop, TURNSTILE_SECRET_KEY: TEST_SECRETS.passes }),
      "HUMAN_CHECK_FAILED",
    );
    // A secret siteverify vouches with, but the token was solved on the stand-in's host, not the shop's.
    await expectRefused(
      await deployedCheckoutWith(sale.id, "hc-deployed-foreign", { ...shop, TURNSTILE_SECRET_KEY: STAND_IN_SECRET }),
      "HUMAN_CHECK_FAILED",
    );
    // No host names set: nothing to check a token against, so none passes.
    await expectRefused(
      await deployedCheckoutWith(sale.id, "hc-deployed-nohosts", { TURNSTILE_SECRET_KEY: STAND_IN_SECRET }),
      "HUMAN_CHECK_FAILED",
    );
    expect(await buyers(sale.id)).toEqual([]);
    // Solved on one of the shop's host names (any case): it passes.
    const ours = {
      TURNSTILE_HOSTNAMES: `shop.example,${STAND_IN_HOSTNAME.toUpperCase()}`,
      TURNSTILE_SECRET_KEY: STAND_IN_SECRET,
    };
    expect((await deployedCheckoutWith(sale.id, "hc-deployed-ours", ours)).status).toBe(202);
    expect(await buyers(sale.id)).toEqual(["hc-deployed-ours"]);
  });

  it("changes only before the sale starts", async () => {
    const upcoming = await createSale({
      startsAt: new Date(Date.now() + 3_600_000).toISOString(),
      endsAt: new Date(Date.now() + 7_200_000).toISOString(),
    });
    const edited = await api.editSale(upcoming.id, { humanCheck: true });
    expect(edited.status).toBe(200);
    expect(edited.body?.humanCheck).toBe(true);

    const live = await createSale();
    const refused = await api.editSale(live.id, { humanCheck: true });
    expect([refused.status, refused.code]).toEqual([409, "SALE_STARTED"]);
    expect(env.TURNSTILE_SECRET_KEY).toBe(TEST_SECRETS.passes); // the suite's secret, for the tests above
  });
});
