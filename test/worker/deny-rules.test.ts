// Deny rules: managed by the admin, matched in the isolate, and the callers they match lose
// quietly: never a unit, the refusal a person could get, and a DENIED count in the stats.
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { eventually } from "../../dev/lib/wait";
import { standInToken } from "../../dev/turnstile/test-keys";
import { humanCheckAction } from "../../src/admission/human-check";
import type { DenyRuleList, DenyRuleView, SaleStats } from "../../src/shared/api-types";
import { bucketKeys } from "../../src/shared/keys";
import { BASE, bearer, checkout, createSale, redis, userToken } from "./helpers";

const admin = { ...bearer(env.ADMIN_TOKEN), "Content-Type": "application/json" };

async function addRule(rule: Record<string, unknown>): Promise<DenyRuleView> {
  const res = await SELF.fetch(`${BASE}/admin/deny-rules`, { method: "POST", headers: admin, body: JSON.stringify(rule) });
  expect(res.status).toBe(201);
  return (await res.json()) as DenyRuleView;
}

const deleteRule = (id: string) => SELF.fetch(`${BASE}/admin/deny-rules/${id}`, { method: "DELETE", headers: admin });

async function listRules(): Promise<DenyRuleList> {
  return (await (await SELF.fetch(`${BASE}/admin/deny-rules`, { headers: admin })).json()) as DenyRuleList;
}

async function errorCode(res: Response): Promise<string> {
  return ((await res.json()) as { error: { code: string } }).error.code;
}

/** DENIED counted for the sale over the stats' window (the isolate writes its counts a second after). */
async function deniedCount(saleId: string): Promise<number> {
  const res = await SELF.fetch(`${BASE}/admin/sales/${saleId}/stats`, { headers: admin });
  const stats = (await res.json()) as SaleStats;
  return stats.series.points.reduce((sum, p) => sum + (p.counts.DENIED ?? 0), 0);
}

const buyers = async (saleId: string) => ((await redis.hkeys(bucketKeys(saleId, 0, 1).buyers)) as string[]).sort();

describe("deny rules: the admin API", () => {
  it("needs the admin token", async () => {
    for (const [method, path] of [
      ["GET", "/admin/deny-rules"],
      ["POST", "/admin/deny-rules"],
      ["DELETE", "/admin/deny-rules/1"],
    ] as const) {
      const res = await SELF.fetch(`${BASE}${path}`, {
        method,
        headers: { ...bearer("not-the-admin-token"), "Content-Type": "application/json" },
        ...(method === "POST" && { body: JSON.stringify({ kind: "user", value: "x" }) }),
      });
      expect(res.status).toBe(401);
    }
  });

  it("adds, lists with ids, replaces the same kind and value, and deletes", async () => {
    const rule = await addRule({ kind: "ip", value: "203.0.113.7", note: "scraper" });
    expect(rule).toMatchObject({ kind: "ip", value: "203.0.113.7", note: "scraper", expiresAt: null });
    expect(rule.id).toMatch(/^\d+$/);
    const again = await addRule({ kind: "ip", value: "203.0.113.7", note: "scraper, again" });
    expect(again.id).toBe(rule.id);
    expect((await listRules()).rules.filter((r) => r.id === rule.id)).toEqual([again]);

    const bad = await SELF.fetch(`${BASE}/admin/deny-rules`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify({ kind: "user", value: "u", expiresAt: new Date(Date.now() - 1000).toISOString() }),
    });
    expect([bad.status, await errorCode(bad)]).toEqual([400, "BAD_REQUEST"]);

    const deleted = await deleteRule(rule.id);
    expect(deleted.status).toBe(200);
    expect(((await deleted.json()) as DenyRuleList).rules.map((r) => r.id)).not.toContain(rule.id);
    const missing = await deleteRule(rule.id);
    expect([missing.status, await errorCode(missing)]).toEqual([404, "RULE_NOT_FOUND"]);
  });
});

describe("deny rules: denied callers lose quietly", () => {
  it("never get a unit, are answered SOLD_OUT while stock remains, and are counted", async () => {
    const sale = await createSale({ stock: 5 });
    const byUser = await addRule({ kind: "user", value: "deny-bot-user" });
    const byIp = await addRule({ kind: "ip", value: "198.51.100.23" });
    const byAgent = await addRule({ kind: "user-agent", value: "HeadlessBuyer" });

    const attempts = [
      checkout(sale.id, await userToken("deny-bot-user")),
      checkout(sale.id, await userToken("deny-bot-ip"), { headers: { "CF-Connecting-IP": "198.51.100.23" } }),
      checkout(sale.id, await userToken("deny-bot-agent"), { headers: { "User-Agent": "Mozilla/5.0 (headlessbuyer/2.1)" } }),
    ];
    for (const res of await Promise.all(attempts)) expect([res.status, await errorCode(res)]).toEqual([409, "SOLD_OUT"]);

    // A person beside them buys: the sale was not sold out.
    expect((await checkout(sale.id, await userToken("deny-person"))).status).toBe(202);
    expect(await buyers(sale.id)).toEqual(["deny-person"]);
    await eventually("three DENIED counted", async () => (await deniedCount(sale.id)) === 3, 30_000);

    // Deleted, a rule no longer matches.
    for (const rule of [byUser, byIp, byAgent]) expect((await deleteRule(rule.id)).status).toBe(200);
    expect((await checkout(sale.id, await userToken("deny-bot-user"))).status).toBe(202);
  });

  it("on a sale with the human check, are answered HUMAN_CHECK_FAILED even with a good token", async () => {
    const sale = await createSale({ stock: 5, humanCheck: true });
    const rule = await addRule({ kind: "user", value: "deny-hc-bot" });
    const res = await checkout(sale.id, await userToken("deny-hc-bot"), {
      headers: { "Human-Check": standInToken(humanCheckAction(sale.id)) },
    });
    expect([res.status, await errorCode(res)]).toEqual([403, "HUMAN_CHECK_FAILED"]);
    expect(await buyers(sale.id)).toEqual([]);
    await eventually("one DENIED counted", async () => (await deniedCount(sale.id)) === 1, 30_000);
    await deleteRule(rule.id);
  });

  it("stop matching when they expire", async () => {
    const sale = await createSale({ stock: 5 });
    const rule = await addRule({ kind: "user", value: "deny-brief", expiresAt: new Date(Date.now() + 1_500).toISOString() });
    const first = await checkout(sale.id, await userToken("deny-brief"));
    expect(first.status).toBe(409);
    await eventually(
      "the rule to expire",
      async () => (await checkout(sale.id, await userToken("deny-brief"))).status === 202,
      30_000,
    );
    expect(await buyers(sale.id)).toEqual(["deny-brief"]);
    await deleteRule(rule.id);
  });
});

describe("ip deny rules: addresses as people hold them", () => {
  it("take an address or a CIDR range, kept written one way; anything else is 400 BAD_REQUEST", async () => {
    const v4 = await addRule({ kind: "ip", value: "203.0.113.77/24" });
    const v6 = await addRule({ kind: "ip", value: "2001:DB8:0:0:0:0:0:0/48" });
    const one = await addRule({ kind: "ip", value: "2001:db8:0000::0001" });
    expect([v4.value, v6.value, one.value]).toEqual(["203.0.113.0/24", "2001:db8::/48", "2001:db8::1"]);
    // The same range written another way is the same rule.
    expect((await addRule({ kind: "ip", value: "2001:db8::/48", note: "again" })).id).toBe(v6.id);
    for (const value of ["not-an-address", "203.0.113.0/33", "2001:db8::/129", "203.0.113", "198.51.100.1, 198.51.100.2"]) {
      const res = await SELF.fetch(`${BASE}/admin/deny-rules`, {
        method: "POST",
        headers: admin,
        body: JSON.stringify({ kind: "ip", value }),
      });
      expect([res.status, await errorCode(res)], value).toEqual([400, "BAD_REQUEST"]);
    }
    for (const rule of [v4, v6, one]) await deleteRule(rule.id);
  });

  it("match every address of a range, and an IPv6 rule's whole /64 (ADDRESS_PREFIX_V6) however narrow", async () => {
    const sale = await createSale({ stock: 20 });
    const rules = [
      await addRule({ kind: "ip", value: "198.51.100.0/24" }),
      await addRule({ kind: "ip", value: "2001:db8:aaaa::/48" }),
      await addRule({ kind: "ip", value: "2001:db8:bbbb:1::7" }),
    ];
    try {
      const from = async (userId: string, address: string) =>
        checkout(sale.id, await userToken(userId), { headers: { "CF-Connecting-IP": address } });
      const denied = [
        ["cidr-v4", "198.51.100.254"],
        ["cidr-v6", "2001:db8:aaaa:ffff::1"],
        ["same-64", "2001:db8:bbbb:1:abcd::99"],
        ["mapped", "::ffff:198.51.100.9"],
      ];
      for (const [userId, address] of denied) {
        const res = await from(`deny-${userId}`, address as string);
        expect([res.status, await errorCode(res)], userId).toEqual([409, "SOLD_OUT"]);
      }
      const allowed = [
        ["next-v4", "198.51.101.1"],
        ["next-48", "2001:db8:aaab::1"],
        ["next-64", "2001:db8:bbbb:2::7"],
      ];
      for (const [userId, address] of allowed) expect((await from(`deny-${userId}`, address as string)).status, userId).toBe(202);
      expect(await buyers(sale.id)).toEqual(["deny-next-48", "deny-next-64", "deny-next-v4"]);
    } finally {
      for (const rule of rules) await deleteRule(rule.id);
    }
  });
});
