// The gateway's own Redis user. Refusing KEYS, FLUSHALL, CONFIG ... as commands is not enough:
// a script runs them (EVAL "return redis.call('KEYS','*')" 0). So, unless the gateway is
// started with --allow-admin-commands, every connection it opens for its clients logs in as a
// user of its own that Redis itself denies the @admin and @dangerous commands, inside scripts
// too. The user is made with the Redis URL's credentials (which must allow ACL SETUSER), under
// a random name and password, made again when Redis comes back without it (a restart forgets
// users not saved to an ACL file), and removed when the gateway closes.
import { randomBytes } from "node:crypto";
import { Redis, type RedisOptions } from "ioredis";

/**
 * What the user may do: every key and channel, every command but @admin and @dangerous. INFO
 * (in @dangerous) stays: it only reads, and ioredis asks it to learn that Redis has loaded.
 * No `reset`: making the user again where it exists changes nothing, and keeps its connections.
 */
const RULES = ["on", "~*", "&*", "+@all", "-@admin", "-@dangerous", "+info"];

/** Redis refused the login: the user is missing (or was changed) on this Redis. */
export const isWrongPass = (error: unknown): boolean => error instanceof Error && error.message.startsWith("WRONGPASS");

export class RestrictedUser {
  readonly username = `flash-sale-gateway-${randomBytes(6).toString("hex")}`;
  readonly password = randomBytes(24).toString("base64url");
  private making: Promise<void> | undefined;

  /** `adminUrl`: the Redis URL the gateway was given; its user must be allowed ACL SETUSER. */
  constructor(
    private readonly adminUrl: string,
    private readonly options: RedisOptions,
  ) {}

  /** Makes the user (again); calls while one attempt runs share it. */
  make(): Promise<void> {
    this.making ??= this.asAdmin((admin) => admin.call("ACL", "SETUSER", this.username, ...RULES, `>${this.password}`)).finally(
      () => {
        this.making = undefined;
      },
    );
    return this.making;
  }

  /** Removes the user (and so any connection still logged in as it); best effort. */
  async remove(): Promise<void> {
    await this.asAdmin((admin) => admin.call("ACL", "DELUSER", this.username)).catch(() => {});
  }

  private async asAdmin(work: (admin: Redis) => Promise<unknown>): Promise<void> {
    const admin = new Redis(this.adminUrl, {
      ...this.options,
      connectionName: "gateway-acl",
      retryStrategy: () => null,
      enableReadyCheck: false, // it sends ACL commands only
    });
    admin.on("error", () => {}); // Surfaces as a rejected connect() or command.
    try {
      await admin.connect();
      await work(admin);
    } finally {
      admin.disconnect();
    }
  }
}
