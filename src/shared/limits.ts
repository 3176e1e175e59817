// Every limit and id pattern of the API, defined once. Import-free, so the Worker, the
// Node-side tools and the tests all read the same numbers.

/** Sale ids are D1 row ids below 2^53; anything else is refused before touching Redis or D1. */
export const SALE_ID_PATTERN = /^[1-9][0-9]{0,15}$/;

/**
 * Order ids are 64-bit, sent as decimal strings (they exceed 2^53): public ones from 2^63 up, 20
 * digits at most, and the internal ones below (src/shared/public-order-id.ts).
 */
export const ORDER_ID_PATTERN = /^[1-9][0-9]{0,19}$/;

/** Lab sale ids are lowercase UUIDs, so they can never alias a real sale's digits. */
export const LAB_SALE_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The longest user id (a token's `sub`) the checkout accepts. */
export const MAX_USER_ID_LENGTH = 128;

/** Names DEV_LOGIN mints tokens for: short and plain, so they read well in the console and logs. */
export const DEV_USER_ID_PATTERN = /^[\w.@-]{1,64}$/;

/** Units per sale: a sale's Redis keys are sized for a million buyers (docs/architecture.md, big keys). */
export const MAX_STOCK = 1_000_000;
/** A variant's id: what checkout names and orders carry ("eu-42"). */
export const VARIANT_ID_PATTERN = /^[A-Za-z0-9._-]{1,32}$/;
/** The one variant of a sale created without variants. */
export const DEFAULT_VARIANT = "default";
/** A sale with variants has 2 to 50 of them. */
export const VARIANT_COUNT = { min: 2, max: 50 } as const;

/**
 * A sale's window: it starts at most a day ago and at most a year ahead, and lasts at most 30
 * days. A window holds an order-id slot for its whole length, so a sale from year 0 to 9999
 * would hold one forever.
 */
export const SALE_WINDOW = {
  maxStartAgoMs: 86_400_000,
  maxStartAheadMs: 365 * 86_400_000,
  maxLengthMs: 30 * 86_400_000,
} as const;

/** What a sale's page shows: a description and an image, bounded. */
export const MAX_DESCRIPTION_LENGTH = 2_000;
export const MAX_IMAGE_URL_LENGTH = 2_000;

/** Sales per page of GET /api/sales. */
export const CATALOG_PAGE_SIZE = 20;
/** After a sale changes, its cached pages are evicted at once and again this much later. */
export const EVICT_AGAIN_AFTER_SECONDS = 2;

/**
 * The Bloom filter of sale ids, sized for a million sales at 1% false positives: bits =
 * -n ln p / (ln 2)^2 (about 1.2 MB), hashes = (bits / n) ln 2, rounded.
 */
export const BLOOM = { capacity: 1_000_000, bits: 9_585_059, hashes: 7 } as const;

/** The most admission a sale may be given: refill per second and bucket capacity. */
export const MAX_ADMISSION = { rate: 100_000, burst: 1_000_000 } as const;

/** Admission when a sale does not set it: what one Upstash database comfortably takes for one sale. */
export const DEFAULT_ADMISSION = { rate: 2_000, burst: 4_000 } as const;

/**
 * Orders per queue message, and so buyers per merged checkout call (lua/checkout.lua takes
 * at most this many): 100 orders of about 120 bytes of JSON stay far below a message's 128 KB.
 */
export const QUEUE_MESSAGE_MAX_ORDERS = 100;

/** Request bodies the Worker reads at all. */
export const MAX_BODY_BYTES = 16 * 1024;

/** Units one buyer may hold in a sale, at most (a sale sets its own limit up to this). */
export const MAX_PER_USER_LIMIT = 10;

/** How long a settled order may wait for its payment, at most, and by default. */
export const MAX_PAYMENT_WINDOW_SEC = 3_600;
export const DEFAULT_PAYMENT_WINDOW_SEC = 600;

/** Prices in minor units: price x MAX_PER_USER_LIMIT stays an exact integer. */
export const MAX_PRICE = 1_000_000_000_000;
export const CURRENCY_PATTERN = /^[A-Z]{3}$/;
export const DEFAULT_CURRENCY = "USD";

/** Idempotency-Key headers, in characters. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 200;

/**
 * A sale's waiting room (`queue`): joining opens up to a day before the start, places are
 * admitted at 1 to 100,000 a second, and an admitted buyer has 30 s to an hour to check out.
 */
export const QUEUE_LIMITS = {
  prequeueSec: { min: 0, max: 86_400 },
  admitPerSec: { min: 1, max: 100_000 },
  passTtlSec: { min: 30, max: 3_600 },
} as const;

/** The waiting room of a sale that does not set one: off, and what it would be if turned on. */
export const DEFAULT_QUEUE = { mode: "off", prequeueSec: 900, admitPerSec: 100, passTtlSec: 300 } as const;

/** The most places one progress call of lua/waiting-room-progress.lua admits; the next call goes on. */
export const QUEUE_ADMIT_PER_CALL = 5_000;

/** How long an isolate answers polls of a sale's line from the progress it last read (ms). */
export const QUEUE_PROGRESS_TTL_MS = 1_000;

/**
 * The waiting room's measured rates (places let in, units given back) are read over about the
 * last this many ms, and never less than two no-show graces: admissions that follow no-shows
 * come in bursts a grace apart (lua/waiting-room-progress.lua).
 */
export const QUEUE_MEASURE_WINDOW_MS = 60_000;

/** An operator's notice on a sale's pages, at most this many characters. */
export const NOTICE_MAX_CHARS = 280;

/** A presale lane's name: what its codes are issued for and the console shows. */
export const LANE_NAME_PATTERN = /^[a-z0-9-]{1,32}$/;
/** A sale has at most this many lanes before its public start. */
export const MAX_LANES = 10;
/** Codes one batch makes, at most; uses one code may have, at most. */
export const CODE_BATCH_LIMITS = { count: { min: 1, max: 100_000 }, uses: { min: 1, max: 1_000 } } as const;

/** The leaves of one chunk of a draw's Merkle tree (a power of two: see treeHash in src/shared/draw-proof.ts). */
export const DRAW_CHUNK_LEAVES = 1_024;

/** Entries a step of a draw reads at most (an HSCAN's COUNT, a page of D1 rows). */
export const DRAW_PAGE = 1_000;
