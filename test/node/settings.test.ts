// The settings table is the one home of every setting: its defaults parse, a value that does
// not is refused by name (never replaced by the default), and nothing else in the Worker reads
// a setting from env.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../dev/lib/project.ts";
import { parseSettings, SETTINGS, type SettingName, SettingsRefused } from "../../src/shared/settings.ts";

const names = Object.keys(SETTINGS) as SettingName[];

describe("settings", () => {
  it("parse from nothing to their defaults, the ones wrangler.toml's [vars] carries", () => {
    const settings = parseSettings({});
    expect(settings.REDIS_TIMEOUT_MS).toBe(1_500);
    expect(settings.IP_RATE_LIMIT).toBe(20);
    expect(settings.LAB_ENABLED).toBe(false);
    expect(settings.ALLOWED_ORIGINS).toEqual([]);
    expect(settings.TURNSTILE_VERIFY_URL).toBe("https://challenges.cloudflare.com/turnstile/v0/siteverify");
    expect(settings.JWT_ISSUER).toBeUndefined();
    const toml = readFileSync(path.join(ROOT, "wrangler.toml"), "utf8");
    for (const name of names.filter((n) => SETTINGS[n].kind === "var")) {
      expect(toml).toContain(`\n${name} = ${JSON.stringify(SETTINGS[name].fallback)}\n`);
    }
  });

  it("read what they accept, and an empty value as unset", () => {
    const settings = parseSettings({
      RESTORE_QUIET_MS: "0",
      QUEUE_JOINS_PER_USER_PER_MIN: "0",
      DEV_LOGIN: "true",
      ALLOWED_ORIGINS: " https://a.example/, https://b.example ",
      PAYMENT_PROVIDER: "",
      LOCK_QUORUM_NODES: '[{"url": "https://a.upstash.io", "token": "t"}]',
    });
    expect(settings.RESTORE_QUIET_MS).toBe(0);
    expect(settings.QUEUE_JOINS_PER_USER_PER_MIN).toBe(0);
    expect(settings.DEV_LOGIN).toBe(true);
    expect(settings.ALLOWED_ORIGINS).toEqual(["https://a.example", "https://b.example"]);
    expect(settings.PAYMENT_PROVIDER).toBe("");
    expect(settings.LOCK_QUORUM_NODES).toEqual([{ url: "https://a.upstash.io", token: "t" }]);
  });

  it("refuse a value that does not parse, naming the setting and what it accepts, never falling back", () => {
    const refusal = (env: Record<string, string>) => {
      try {
        parseSettings(env);
      } catch (err) {
        return err;
      }
      return undefined;
    };
    for (const [name, value] of [
      ["RESTORE_QUIET_MS", " 30000"],
      ["REDIS_TIMEOUT_MS", "1.5e3"],
      ["IP_RATE_LIMIT", "-1"],
      ["ADMIN_AUTH_FAILURES_PER_MIN", "0"],
      ["LAB_ENABLED", "yes"],
      ["ALLOWED_ORIGINS", "*"],
      ["PAYMENT_PROVIDER", "stripe"],
      ["TURNSTILE_VERIFY_URL", "ftp://example.com"],
    ] as const) {
      const err = refusal({ [name]: value });
      expect(err, `${name}=${value}`).toBeInstanceOf(SettingsRefused);
      expect((err as SettingsRefused).problems).toEqual([
        `${name} must be ${SETTINGS[name].accepts} (it is ${JSON.stringify(value)})`,
      ]);
    }
    // Every bad one at once; a secret's value is never repeated.
    const err = refusal({ LOCK_QUORUM_NODES: "[{]", JWT_MAX_TTL_SEC: "0" }) as SettingsRefused;
    expect(err.problems).toEqual([
      `JWT_MAX_TTL_SEC must be ${SETTINGS.JWT_MAX_TTL_SEC.accepts} (it is "0")`,
      `LOCK_QUORUM_NODES must be ${SETTINGS.LOCK_QUORUM_NODES.accepts}`,
    ]);
  });

  it("are read from env by src/shared/settings.ts alone", () => {
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith(".ts") ? [path.join(dir, e.name)] : [],
      );
    const reads = new RegExp(`\\b(?:env\\.(?:${names.join("|")})\\b|env\\[)`);
    const readers = files(path.join(ROOT, "src"))
      .filter((file) => file !== path.join(ROOT, "src", "shared", "settings.ts"))
      .filter((file) => reads.test(readFileSync(file, "utf8")))
      .map((file) => path.relative(ROOT, file));
    expect(readers).toEqual([]);
  });
});
