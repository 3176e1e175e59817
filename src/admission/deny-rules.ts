// Deny rules: callers an operator has picked out (a client address or range, a user id, a user
// agent) are refused quietly, with the answer a person would get, and counted. D1 is the
// record; each isolate keeps the live rules in memory a few seconds, so matching costs nothing:
// a few map lookups, however many rules (src/shared/addresses.ts).
import { IsolateCache } from "../isolate/isolate-cache";
import type { KeepAlive } from "../isolate/shared-work";
import { type AddressRange, AddressRanges, addressRangeOf, type ClientAddress } from "../shared/addresses";
import { log } from "../shared/log";

export type DenyKind = "ip" | "user" | "user-agent";

export interface DenyRule {
  id: number;
  kind: DenyKind;
  /**
   * ip: an address or CIDR range (an IPv6 one covers at least the caller's ADDRESS_PREFIX_V6
   * prefix); user: the exact user id; user-agent: a case-insensitive part of it.
   */
  value: string;
  note: string;
  /** Epoch ms; null: until deleted. */
  expiresAt: number | null;
  createdAt: number;
}

export type NewDenyRule = Pick<DenyRule, "kind" | "value" | "note" | "expiresAt">;

/** How long an isolate uses the rules it read: a new rule reaches every isolate within this. */
export const DENY_RULES_TTL_MS = 10_000;
/** The most rules an isolate holds (the newest); the admin API refuses more. */
export const MAX_DENY_RULES = 10_000;

interface DenyRuleRow {
  id: number;
  kind: DenyKind;
  value: string;
  note: string;
  expires_at: number | null;
  created_at: number;
}

const fromRow = (row: DenyRuleRow): DenyRule => ({
  id: row.id,
  kind: row.kind,
  value: row.value,
  note: row.note,
  expiresAt: row.expires_at,
  createdAt: row.created_at,
});

const COLUMNS = "id, kind, value, note, expires_at, created_at";

export async function listDenyRules(db: D1Database): Promise<DenyRule[]> {
  const { results } = await db
    .prepare(`SELECT ${COLUMNS} FROM deny_rules ORDER BY id DESC LIMIT ?`)
    .bind(MAX_DENY_RULES)
    .all<DenyRuleRow>();
  return results.map(fromRow);
}

/**
 * Adds a rule; the same kind and value again replaces its note and expiry (one rule each).
 * Undefined when MAX_DENY_RULES are kept already.
 */
export async function putDenyRule(db: D1Database, rule: NewDenyRule, now = Date.now()): Promise<DenyRule | undefined> {
  const row = await db
    .prepare(
      `INSERT INTO deny_rules (kind, value, note, expires_at, created_at)
       SELECT ?1, ?2, ?3, ?4, ?5 WHERE (SELECT COUNT(*) FROM deny_rules) < ?6
          OR EXISTS (SELECT 1 FROM deny_rules WHERE kind = ?1 AND value = ?2)
       ON CONFLICT (kind, value) DO UPDATE SET note = excluded.note, expires_at = excluded.expires_at
       RETURNING ${COLUMNS}`,
    )
    .bind(rule.kind, rule.value, rule.note, rule.expiresAt, now, MAX_DENY_RULES)
    .first<DenyRuleRow>();
  return row ? fromRow(row) : undefined;
}

/** Removes a rule; false when there was none with this id. */
export async function deleteDenyRule(db: D1Database, id: number): Promise<boolean> {
  const result = await db.prepare("DELETE FROM deny_rules WHERE id = ?").bind(id).run();
  return result.meta.changes > 0;
}

/** Who is asking, as the Worker sees it. */
export interface Caller {
  /** CF-Connecting-IP, parsed and grouped (src/http/client-address.ts). */
  address: ClientAddress | undefined;
  userId: string;
  userAgent: string | undefined;
}

/** The later of two expiries; null: never. */
const later = (a: number | null, b: number | null) => (a === null || b === null ? null : Math.max(a, b));

/** The rules as an isolate matches them: addresses by range, user ids exactly, user-agent parts lower-cased, each with its expiry. */
class DenyMatcher {
  private readonly users = new Map<string, number | null>();
  private readonly addresses: AddressRanges<number | null>;
  private readonly agentParts: { part: string; expiresAt: number | null }[] = [];

  constructor(rules: DenyRule[]) {
    const ranges: { range: AddressRange; value: number | null }[] = [];
    for (const rule of rules) {
      if (rule.kind === "user-agent") this.agentParts.push({ part: rule.value.toLowerCase(), expiresAt: rule.expiresAt });
      else if (rule.kind === "user")
        this.users.set(rule.value, later(this.users.get(rule.value) ?? rule.expiresAt, rule.expiresAt));
      else {
        // Rules kept before values were checked may hold anything: one that is no address matches nobody.
        const range = addressRangeOf(rule.value);
        if (range) ranges.push({ range, value: rule.expiresAt });
      }
    }
    this.addresses = new AddressRanges(ranges, later);
  }

  matches(caller: Caller, now: number): boolean {
    const live = (expiresAt: number | null | undefined) => expiresAt === null || (expiresAt !== undefined && expiresAt > now);
    if (caller.address && live(this.addresses.match(caller.address))) return true;
    if (live(this.users.get(caller.userId))) return true;
    const agent = caller.userAgent?.toLowerCase();
    return agent !== undefined && this.agentParts.some((r) => live(r.expiresAt) && agent.includes(r.part));
  }
}

// One entry, whose size grows with the rules: up to MAX rules of a few hundred bytes each.
const matchers = new IsolateCache<DenyMatcher>({ ttlMs: DENY_RULES_TTL_MS, maxEntries: 1, maxBytes: 8 << 20 });
/**
 * The rules last read, used while D1 cannot be read: a blip of D1 does not stop checkout (an
 * isolate that never read them lets callers through meanwhile: the rules filter, they guard no invariant).
 */
let lastRead: DenyMatcher | undefined;

async function liveMatcher(db: D1Database, keepAlive: KeepAlive): Promise<DenyMatcher | undefined> {
  try {
    return await matchers.getOrLoad(
      "rules",
      async () => {
        lastRead = new DenyMatcher(await listDenyRules(db));
        return lastRead;
      },
      keepAlive,
    );
  } catch (err) {
    log.warn("deny rules: D1 unavailable, the rules last read apply", {}, err);
    return lastRead;
  }
}

/** Whether a deny rule matches the caller. */
export async function isDenied(db: D1Database, caller: Caller, keepAlive: KeepAlive, now = Date.now()): Promise<boolean> {
  return (await liveMatcher(db, keepAlive))?.matches(caller, now) ?? false;
}

/** Whether a deny rule matches the caller, by the rules this isolate holds; undefined when it holds none fresh. */
export function deniedByHeldRules(caller: Caller, now = Date.now()): boolean | undefined {
  return matchers.get("rules", now)?.matches(caller, now);
}

/** The rules changed: this isolate reads them again (others within DENY_RULES_TTL_MS). */
export const forgetDenyRules = () => matchers.clear();
