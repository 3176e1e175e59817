#!lua flags=allow-key-locking
--[[
checkout.lua: reserve units of a flash sale for each of a batch of buyers, atomically.

Everything that must not interleave happens here, in one EVALSHA: the sale's state and
window, the buyer's limit, stock, the sale's admission token bucket, the decrement,
recording the buyer, minting the order id and writing the outbox record the settlement
pipeline re-drives from. An isolate merges the checkouts it holds for one sale into one
call, so buyers are served in ARGV order, each seeing what the ones before took (a buyer
listed twice counts both). Refusals before the bucket write nothing, so a sold-out sale or
a buyer at their limit never spends a token nor hides behind a 429.

A queued sale (qmode fifo or random) sells only to a buyer whose waiting-room pass is
admitted, unused and unexpired (waiting-room-progress.lua admits them), and marks the pass used in
the same step as the deduct: no pass, another buyer's, a replayed or an expired one reserves
nothing. The Worker has already checked the pass's signature binds it to buyer and sale. A
quiet place's pass (its record marked quiet: waiting-room-progress.lua) is checked as any
other, then refused as a person is when the units are gone (QUIET_PASS, answered SOLD_OUT),
whatever is left: it never buys, spends nothing and says nothing of the stock. Each
presale lane of a queued sale has a line of its own (docs/lanes.md, "Lanes with a waiting
room"): in a lane's window only a pass of that lane's line buys (its code checked and spent as
well), and from the public start only a pass of the public line.

A sale sold by draw (qmode draw) sells only its draw's offers: the Worker's own calls for the
entries the draw selected (src/checkout/draw-offers.ts), each naming the claim "draw" and
an Idempotency-Key of the entry's, so an offer made twice reserves once. Everyone else is
refused DRAW_ONLY, and offers take no admission token (the draw paced them).

A sale with presale lanes (meta `lanes`, docs/lanes.md) opens at its first lane's start and
sells before its own start (meta `starts`) only to a buyer whose access code the call names:
known, not revoked or expired, of the lane now open or an earlier one, bound to no other
buyer, with a use left. The code is bound to the buyer and one use taken in the same step as
the units, and a lane with an allotment (`la:<lane>`, `la:<lane>:<variant>`) sells no more
than its allotment and what the lanes before it left unsold (`ls:<lane>...` count what each
sold). From the sale's own start codes are neither checked nor spent.

A sale with variants (sizes, colours, tiers: the meta hash has `variants`, lua/sale-sync.lua)
sells each from its own counter `v:<id>` as well as from the total `remaining`; the buyer's
limit counts units across every variant. A sale without has one implicit variant, "default",
sold from `remaining` alone.

KEYS (all share the sale's hash tag, so the script is cluster-safe; the layout of every key is
one table: docs/architecture.md, "The sale's Redis layout")
  1  sale meta hash  remaining, starts (the public start), ends (epoch ms), slot, seq, rate, burst, limit, state,
                     buckets, qmode (off | fifo | random), qopens, qrate, qttl (waiting-room-progress.lua),
                     idms, idn (the sale's id clock: the last order id's ms and index, see idClockFull),
                     variants ("<id>=<stock>,...", a sale with variants only) and v:<id> (each one's remaining),
                     lanes ("<lane>=<start ms>,...", a sale with lanes only), la:<lane>[:<variant>]
                     (allotments) and ls:<lane>[:<variant>] (units each lane sold)
  2  admission hash  token bucket: tokens, at (ms); expires when idle
  3  stats hash      this minute's outcome counters, "<epoch second>:<outcome>" -> count
  4  queue counters  the public line's: admitted, used, expired (waiting-room-progress.lua)
  then, when a buyer names an access code (ARGV 2 > 0), the code keys:
  +1 code batches    "<batch id>:revoked" -> 1, "<batch id>:bound" and ":spent" -> counts
  +2.. code shards   one hash per shard the call's codes live in: code hash ->
                     "<batch id>|<lane>|<uses left>|<expiry ms, 0: none>|<bound user id, or empty>"
  then, when the call names a lane's line (ARGV 3 not ""):
  +1 line counters   that line's admitted, used, expired
  then six keys for each bucket the call's buyers live in (the call names only those), eight
  when it names a lane's line:
  +1 buyers hash     user id -> "<units held>:<latest order id>"
  +2 outbox zset     order ids not settled yet, score = reservation time (ms)
  +3 pending hash    order id -> "<units>[|<lane>|<code hash>][|<traceparent>]:<user id>", units as in
                     ARGV below, the lane and code for a code holder's order in a lane's window,
                     the traceparent when the buyer's request had one (src/shared/keys.ts, parsePendingRecord)
  +4 keys hash       "<user id>\n<Idempotency-Key>" -> "<order id>:<units>", for checkouts that sent one
  +5 passes hash     the public line's: user id -> "<place>:<expiry ms>" while admitted, "<place>:used" once it
                     bought; a quiet place's "<place>:<expiry ms>:q" (waiting-room-progress.lua)
  +6 live zset       the public line's user ids of passes not used yet, scored by expiry (ms)
  +7 line passes     the lane's line's passes hash, as +5
  +8 line live       the lane's line's live zset, as +6
ARGV
  1  the bucket count the Worker split the buyers by: when the sale's own (meta `buckets`,
     1 when absent) differs, nothing is read or written and every buyer gets BUCKETS_CHANGED
  2  how many code keys follow the sale's four (0, or 1 + the code shards named)
  3  the lane whose own line's keys the call names ("" for none): the latest lane any of its
     buyers' passes is of (only that lane's window can be open: its line admits from its start)
  then septuples of user id, quantity, Idempotency-Key ("" for none), the buyer's claim (the
  place its Queue-Pass names, "<place>@<lane>" for a pass of a lane's line, "draw" for a draw's
  offer, "" for none), which of the call's buckets is the buyer's (1 for the first bucket's
  KEYS, 2 for the next...), the
  access code ("<n>:<code hash>", n the code shard among the code keys, 1 for the first; ""
  for none) and the W3C traceparent of the buyer's request ("" for none), kept in the outbox
  record: 1 to 100 septuples. The quantity may name a variant: "<quantity>@<variant id>"
  (recorded so in pending and keys for a sale with variants only)
Reply: one flat array in one layout, whatever the outcomes (src/shared/checkout-reply.ts reads it)
  1  "checkout/5"     the layout; the Worker refuses any other
  2  nowMs            Redis time of the call
  3  startsMs  4  endsMs         the sale window, from its first lane's start (0 when the sale is not found)
  5  rate      6  burst          the admission bucket (0 when the sale is not found)
  7  retryAfterMs     how long until the bucket holds a token again (0 when it holds one)
  8  limit            units one buyer may hold (0 when the sale is not found)
  9  seq              the sale's order sequence after the call: ids it minted ever (the ids
                      this call minted are the last ones; 0 when the sale is not found)
  10 buckets          the sale's bucket count (0 when the sale is not found)
  11 publicStartsMs   the sale's own start, when codes stop being asked for (0 when the sale is not found)
  12 lane             the presale lane open at nowMs, whose allotment this call's code holders bought from ("": none)
  then four fields per buyer, in ARGV order:
     outcome   OK | REPEATED | KEY_REUSED | ALREADY_PURCHASED | PER_USER_LIMIT_EXCEEDED |
               SOLD_OUT | QUANTITY_UNAVAILABLE | RATE_LIMITED | SALE_NOT_STARTED | SALE_ENDED |
               SALE_PAUSED | SALE_CANCELLED | SALE_NOT_FOUND | QUEUE_PASS_REQUIRED |
               QUEUE_PASS_INVALID | QUEUE_PASS_USED | QUEUE_PASS_EXPIRED | BUCKETS_CHANGED |
               VARIANT_REQUIRED (a sale with variants, none named) | VARIANT_NOT_FOUND |
               DRAW_ONLY (a sale sold by draw, and no draw's offer) | ACCESS_CODE_REQUIRED |
               ACCESS_CODE_INVALID | ACCESS_CODE_USED | LANE_SOLD_OUT | LANE_QUANTITY_UNAVAILABLE |
               QUIET_PASS
               LANE_*: the lane open now has no (or too few) units left of its allotment
               (remaining: the lane's units left), while the sale may have more for a later lane
               QUIET_PASS: a quiet place's pass, good in every other way: nothing reserved; the
               Worker answers it as a person's SOLD_OUT (of the variant named)
               REPEATED: this buyer's Idempotency-Key already reserved orderId (nothing new is
               reserved: a retry never buys twice); KEY_REUSED: it did, for other units;
               RATE_LIMITED: the admission bucket is empty, or (field 7 then 1) the sale minted
               all the ids its clock allows in this millisecond
               BUCKETS_CHANGED: the call was split by another count than the sale's (field 10):
               nothing done, send it again split by field 10
     orderId   the order reserved now (OK) or before (REPEATED), or the buyer's latest one, else ""
     remaining units left of the buyer's variant after this buyer (of the sale: when the sale is
               not found or refused as a whole, or the variant is not named or not found)
     held      units the buyer holds after this buyer's turn
Time comes from the Redis server (TIME), never from the caller.
]]

local meta, admission, stats, queueCounters = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local SALE_KEYS, PER_BUYER = 4, 7
local splitBy, codeKeys, lineLane = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local FIRST_BUYER = 4
local lineKeys = lineLane ~= '' and 1 or 0
local KEYS_PER_BUCKET = 6 + 2 * lineKeys
local buyerCount = (#ARGV - FIRST_BUYER + 1) / PER_BUYER
if #ARGV < FIRST_BUYER - 1 + PER_BUYER or #ARGV > FIRST_BUYER - 1 + 100 * PER_BUYER or buyerCount % 1 ~= 0
  or not codeKeys or codeKeys == 1 or (#KEYS - SALE_KEYS - codeKeys - lineKeys) % KEYS_PER_BUCKET ~= 0 then
  return redis.error_reply('checkout.lua takes a bucket count, a code key count, a lane line, then 1 to 100 septuples of user id, quantity, idempotency key, pass, bucket, access code and traceparent')
end
local codeBatches = codeKeys > 0 and KEYS[SALE_KEYS + 1]
local lineCounters = lineKeys > 0 and KEYS[SALE_KEYS + codeKeys + 1]
-- The keys of the call's `n`th bucket.
local function bucketKeys(n)
  local base = SALE_KEYS + codeKeys + lineKeys + (n - 1) * KEYS_PER_BUCKET
  if n < 1 or base + KEYS_PER_BUCKET > #KEYS then
    return nil
  end
  return { buyers = KEYS[base + 1], outbox = KEYS[base + 2], pending = KEYS[base + 3], idempotency = KEYS[base + 4],
    passes = KEYS[base + 5], live = KEYS[base + 6], linePasses = KEYS[base + 7], lineLive = KEYS[base + 8] }
end

local time = redis.call('TIME')
local nowSec = tonumber(time[1])
local nowMs = nowSec * 1000 + math.floor(tonumber(time[2]) / 1000)

-- The sale's order sequence (ids minted so far), bucket count, own start and the lane open now.
local seq, buckets, publicStarts, laneName = 0, 0, 0, ''
local function reply(starts, ends, rate, burst, retryAfter, limit, outcomes)
  return { 'checkout/5', nowMs, starts, ends, rate, burst, retryAfter, limit, seq, buckets, publicStarts, laneName, unpack(outcomes) }
end

-- Outcome counts for the admin console, one field per second and outcome.
local counts = {}
local function count(outcome, n)
  counts[outcome] = (counts[outcome] or 0) + n
end
local function flushCounts()
  for outcome, n in pairs(counts) do
    redis.call('HINCRBY', stats, nowSec .. ':' .. outcome, n)
  end
  redis.call('EXPIRE', stats, 7200) -- SALE_STATS_TTL_SECONDS (src/shared/keys.ts)
end

local function everyone(outcome, remaining)
  local outcomes = {}
  for _ = 1, buyerCount do
    outcomes[#outcomes + 1] = outcome
    outcomes[#outcomes + 1] = ''
    outcomes[#outcomes + 1] = remaining
    outcomes[#outcomes + 1] = 0
  end
  return outcomes
end

local sale = redis.call('HMGET', meta, 'remaining', 'starts', 'ends', 'slot', 'rate', 'burst', 'seq', 'limit', 'state', 'qmode',
  'buckets', 'variants', 'lanes')
if not sale[1] then
  return reply(0, 0, 0, 0, 0, 0, everyone('SALE_NOT_FOUND', 0))
end
seq, buckets = tonumber(sale[7]) or 0, tonumber(sale[11]) or 1
if buckets ~= splitBy then
  return reply(0, 0, 0, 0, 0, 0, everyone('BUCKETS_CHANGED', 0))
end
local remaining, starts, ends, slot = tonumber(sale[1]), tonumber(sale[2]), tonumber(sale[3]), tonumber(sale[4])
local rate, burst, limit = tonumber(sale[5]), tonumber(sale[6]), tonumber(sale[8]) or 1
local queued = sale[10] == 'fifo' or sale[10] == 'random'
local drawn = sale[10] == 'draw'
local hasVariants = sale[12] ~= false

-- The sale's lanes in start order ({ name, starts }), and the one open now (0: none, the
-- public start is past or no lane has started). The sale opens at its first lane's start.
publicStarts = starts
local lanes, lane = {}, 0
for name, from in string.gmatch(sale[13] or '', '([^,=]+)=(%d+)') do
  lanes[#lanes + 1] = { name = name, starts = tonumber(from) }
  if nowMs >= tonumber(from) and nowMs < publicStarts then
    lane = #lanes
  end
end
if lanes[1] then
  starts = math.min(starts, lanes[1].starts)
end
laneName = lane > 0 and lanes[lane].name or ''

-- Whose passes buy now: the public line's, or in a lane's window that lane's line's (named by the
-- call, when any of its buyers holds a pass of it), in the bucket's keys of that line.
local passKeys = lane == 0 and { passes = 'passes', live = 'live', counters = queueCounters }
  or { passes = 'linePasses', live = 'lineLive', counters = lineCounters }

-- A sale sold by draw refuses a call of buyers alone as a whole, whatever its window says.
local offers = false
for i = FIRST_BUYER + 3, #ARGV, PER_BUYER do
  offers = offers or ARGV[i] == 'draw'
end

local saleWide
if drawn and not offers then
  saleWide = 'DRAW_ONLY'
elseif sale[9] == 'cancelled' then
  saleWide = 'SALE_CANCELLED'
elseif sale[9] == 'paused' then
  saleWide = 'SALE_PAUSED'
elseif nowMs < starts then
  saleWide = 'SALE_NOT_STARTED'
elseif nowMs >= ends then
  saleWide = 'SALE_ENDED'
end
if saleWide then
  count(saleWide, buyerCount)
  flushCounts()
  return reply(starts, ends, rate, burst, 0, limit, everyone(saleWide, remaining))
end

-- Admission: a token bucket refilled at `rate` per second up to `burst`; each order takes a
-- token, so orders are reserved (and reach the queue and D1) no faster than the sale allows.
local bucket = redis.call('HMGET', admission, 'tokens', 'at')
local tokens = tonumber(bucket[1]) or burst
local at = tonumber(bucket[2]) or nowMs
tokens = math.min(burst, tokens + math.max(0, nowMs - at) * rate / 1000)

-- Order id = (ms since 2025-12-01 UTC) << 22 | slot << 10 | its index among the sale's ids of
-- that ms. The ms is the sale's own clock: Redis' time, never behind the last id's (idms, idn),
-- and at most 1024 ids a ms (ID_INDEXES), so it never runs ahead of Redis' time either: a buyer
-- past that is RATE_LIMITED for a ms. A Redis back behind (restarted from a copy, a replica that
-- missed the last writes) has its clock moved on past every id it lost, so it cannot mint one
-- again (src/shared/order-id.ts). The sequence (seq) only counts ids; the reply carries it.
local idMs, idIndex, clockFull -- the last id's ms and index, read when a buyer may first mint
local function idClockFull()
  if not idMs then
    local last = redis.call('HMGET', meta, 'idms', 'idn')
    idMs, idIndex = tonumber(last[1]) or -1, tonumber(last[2]) or 0
    local ms = nowMs - 1764547200000 -- ORDER_ID_EPOCH_MS (src/shared/order-id.ts)
    if ms > idMs then
      idMs, idIndex = ms, -1
    end
  end
  clockFull = idIndex >= 1023
  return clockFull
end
-- Lua numbers are doubles, so the 63-bit decimal is assembled from exact parts:
-- ms = m1 * 10^6 + m0, and ms * 2^22 + lo = (m1 * 2^22) * 10^6 + m0 * 2^22 + lo.
local function nextOrderId()
  idIndex = idIndex + 1
  local low = (idMs % 1000000) * 4194304 + slot * 1024 + idIndex
  local upper = math.floor(idMs / 1000000) * 4194304 + math.floor(low / 1000000)
  if upper > 0 then
    return string.format('%.0f%06d', upper, low % 1000000)
  end
  return string.format('%.0f', low % 1000000)
end

-- What each buyer of this call holds: read once, updated as the call goes.
local holdings = {}
local function holding(user, bucket)
  local h = holdings[user]
  if not h then
    local record = redis.call('HGET', bucket.buyers, user)
    local units, last = 0, ''
    if record then
      local u, o = string.match(record, '^(%d+):(%d*)$')
      units, last = tonumber(u), o
    end
    h = { units = units, last = last, bucket = bucket }
    holdings[user] = h
  end
  return h
end

-- What each variant this call sells has left, read once: meta field -> units.
local left = {}
-- The meta field of the variant `units` ("<quantity>[@<variant id>]") names, and its
-- quantity, or why it names none the sale sells. A sale without variants sells "default"
-- (or no variant named) from `remaining` itself.
local function variantOf(units)
  local quantity, variant = string.match(units, '^(%d+)@?(.*)$')
  local field
  if not hasVariants then
    if variant ~= '' and variant ~= 'default' then
      return nil, tonumber(quantity), 'VARIANT_NOT_FOUND'
    end
    field = 'remaining'
  elseif variant == '' then
    return nil, tonumber(quantity), 'VARIANT_REQUIRED'
  else
    field = 'v:' .. variant
  end
  if not left[field] then
    left[field] = tonumber(field == 'remaining' and remaining or redis.call('HGET', meta, field))
    if not left[field] then
      return nil, tonumber(quantity), 'VARIANT_NOT_FOUND'
    end
  end
  return field, tonumber(quantity)
end

-- Why a queued sale's buyer may not buy with the pass their claim names ("<place>", or
-- "<place>@<lane>" for a pass of a lane's line), if they may not; else nil, the place, and
-- whether the pass is a quiet place's.
local spent, spentCount = {}, 0 -- passes this call used: user id -> place
local function passProblem(user, claim, bucket)
  local place, passLane = string.match(claim, '^(%d+)@(.+)$')
  if not place then
    place, passLane = string.match(claim, '^(%d+)$'), ''
  end
  if claim == '' then
    return 'QUEUE_PASS_REQUIRED'
  elseif not place or passLane ~= laneName or (laneName ~= '' and laneName ~= lineLane) then
    return 'QUEUE_PASS_INVALID' -- a pass of a line whose window is not open now
  elseif spent[user] then
    return 'QUEUE_PASS_USED'
  end
  local admittedPlace, expiry, quiet = string.match(redis.call('HGET', bucket[passKeys.passes], user) or '', '^(%d+):(%w+)(:?q?)$')
  if admittedPlace ~= place then
    return 'QUEUE_PASS_INVALID' -- never admitted, or a pass of another place
  elseif expiry == 'used' then
    return 'QUEUE_PASS_USED'
  elseif tonumber(expiry) <= nowMs then
    return 'QUEUE_PASS_EXPIRED'
  end
  return nil, place, quiet == ':q'
end

-- Access codes this call read, by "<shard key>\n<hash>": { batch, lane, uses, expiry, bound, key, hash }.
local codes = {}
local laneIndex = {}
for i, l in ipairs(lanes) do
  laneIndex[l.name] = i
end
-- The code `ref` ("<shard>:<hash>") names, read once per call, or why `user` may not use it in the lane open now.
local function codeFor(user, ref)
  if ref == '' then
    return nil, 'ACCESS_CODE_REQUIRED'
  end
  local shard, hash = string.match(ref, '^(%d+):(%x+)$')
  local shardKey = shard and codeBatches and KEYS[SALE_KEYS + 1 + tonumber(shard)]
  if not shardKey or tonumber(shard) < 1 or tonumber(shard) >= codeKeys then
    return redis.error_reply('checkout.lua: an access code names shard ' .. tostring(shard) .. ', which KEYS do not hold')
  end
  local id = shardKey .. '\n' .. hash
  local code = codes[id]
  if code == nil then
    local record = redis.call('HGET', shardKey, hash)
    local batch, codeLane, uses, expiry, bound = string.match(record or '', '^([^|]+)|([^|]+)|(%d+)|(%d+)|(.*)$')
    code = batch and { batch = batch, lane = codeLane, uses = tonumber(uses), expiry = tonumber(expiry), bound = bound,
      key = shardKey, hash = hash } or false
    if code and redis.call('HEXISTS', codeBatches, batch .. ':revoked') == 1 then
      code = false
    end
    codes[id] = code
  end
  if not code or (code.expiry > 0 and code.expiry <= nowMs) or (code.bound ~= '' and code.bound ~= user)
    or not laneIndex[code.lane] or laneIndex[code.lane] > lane then
    return nil, 'ACCESS_CODE_INVALID'
  elseif code.uses <= 0 then
    return nil, 'ACCESS_CODE_USED'
  end
  return code
end

-- What the open lane may still sell of `suffix` ("" the total, ":<variant>" a variant): its
-- allotment and those of the capped lanes right before it, less what they sold; false when the
-- lane has no allotment of it. Read once per call, then kept as the call sells.
local laneLeft, laneSold = {}, {}
local function laneCap(suffix)
  if laneLeft[suffix] == nil then
    local allotted, sold, capped = 0, 0, false
    for j = lane, 1, -1 do
      local counts = redis.call('HMGET', meta, 'la:' .. lanes[j].name .. suffix, 'ls:' .. lanes[j].name .. suffix)
      if not counts[1] then
        break
      end
      capped = true
      allotted, sold = allotted + tonumber(counts[1]), sold + (tonumber(counts[2]) or 0)
    end
    laneLeft[suffix] = capped and math.max(0, allotted - sold)
  end
  return laneLeft[suffix]
end

-- Writes gathered per bucket of the call (by its position in KEYS), sent after the loop.
local writes = {}
local function writesOf(n, bucket)
  local w = writes[n]
  if not w then
    w = { bucket = bucket, buyers = {}, outbox = {}, pending = {}, keys = {}, spent = {} }
    writes[n] = w
  end
  return w
end

local outcomes = {}
local keysHere = {}
-- Codes this call spent (by shard key and hash), and its batches' counters to add.
local codesSpent, batchCounts = {}, {}
local reservedAny = false
for i = FIRST_BUYER, #ARGV, PER_BUYER do
  local user, key, claim, n = ARGV[i], ARGV[i + 2], ARGV[i + 3], tonumber(ARGV[i + 4])
  local offer = claim == 'draw'
  local field, quantity, variantRefusal = variantOf(ARGV[i + 1])
  -- What pending and keys record: the variant only where the sale has variants.
  local units = hasVariants and ARGV[i + 1] or tostring(quantity)
  local bucket = bucketKeys(n)
  if not bucket then
    return redis.error_reply('checkout.lua: buyer ' .. ((i - FIRST_BUYER) / PER_BUYER + 1) .. ' names bucket ' .. tostring(ARGV[i + 4]) .. ', which KEYS do not hold')
  end
  local h = holding(user, bucket)
  local outcome, orderId = 'OK', h.last
  local keyField = key ~= '' and (user .. '\n' .. key) or nil
  local before = keyField and (keysHere[keyField] or redis.call('HGET', bucket.idempotency, keyField))
  -- A retry of a reservation made (REPEATED) needs no pass: its pass was used by that reservation.
  local passRefusal, place, quietPass
  if not before and queued then
    passRefusal, place, quietPass = passProblem(user, offer and '' or claim, bucket)
  end
  -- In a lane's window: the buyer's code, and what the lane may still sell of the buyer's
  -- variant (its total and its own allotment, the smaller; math.huge: no allotment).
  local code, codeRefusal, suffix
  local inLane = math.huge
  if lane > 0 and not before then
    code, codeRefusal = codeFor(user, ARGV[i + 5])
    if type(code) == 'table' and code.err then
      return code
    end
    suffix = hasVariants and field and (':' .. string.sub(field, 3)) or nil
    inLane = math.min(laneCap('') or math.huge, suffix and laneCap(suffix) or math.huge)
  end
  if drawn ~= offer then
    outcome = 'DRAW_ONLY' -- a draw's offer reserves only from a sale sold by draw
  elseif before then
    local o, u = string.match(before, '^(%d+):(.+)$')
    orderId = o
    if u == units then
      outcome = 'REPEATED'
    else
      outcome = 'KEY_REUSED'
    end
  elseif codeRefusal then
    outcome = codeRefusal -- in a lane's window the code first: without one no line of it lets anyone in
  elseif passRefusal then
    outcome = passRefusal
  elseif variantRefusal then
    outcome = variantRefusal
  elseif h.units >= limit then
    outcome = 'ALREADY_PURCHASED'
  elseif h.units + quantity > limit then
    outcome = 'PER_USER_LIMIT_EXCEEDED'
  elseif quietPass then
    outcome = 'QUIET_PASS' -- from here on a person's answer would tell of the stock
  elseif left[field] <= 0 then
    outcome = 'SOLD_OUT'
  elseif left[field] < quantity then
    outcome = 'QUANTITY_UNAVAILABLE'
  elseif inLane <= 0 then
    outcome = 'LANE_SOLD_OUT'
  elseif inLane < quantity then
    outcome = 'LANE_QUANTITY_UNAVAILABLE'
  elseif (tokens < 1 and not offer) or idClockFull() then
    outcome = 'RATE_LIMITED'
  else
    if not offer then
      tokens = tokens - 1
    end
    remaining, seq = remaining - quantity, seq + 1
    left[field] = left[field] - quantity
    left.remaining = remaining
    orderId = nextOrderId()
    h.units, h.last = h.units + quantity, orderId
    reservedAny = true
    local w = writesOf(n, bucket)
    w.buyers[user] = h
    if queued then
      spent[user] = place
      w.spent[user] = place
      spentCount = spentCount + 1
    end
    w.outbox[#w.outbox + 1] = nowMs
    w.outbox[#w.outbox + 1] = orderId
    w.pending[#w.pending + 1] = orderId
    if code then
      -- Bound to this buyer, one use taken; the lane's counts of the units it sold.
      if code.bound == '' then
        code.bound = user
        batchCounts[code.batch .. ':bound'] = (batchCounts[code.batch .. ':bound'] or 0) + 1
      end
      code.uses = code.uses - 1
      codesSpent[code.key .. '\n' .. code.hash] = code
      batchCounts[code.batch .. ':spent'] = (batchCounts[code.batch .. ':spent'] or 0) + 1
      for _, s in ipairs({ '', suffix }) do
        laneSold[s] = (laneSold[s] or 0) + quantity
        if laneLeft[s] then
          laneLeft[s] = laneLeft[s] - quantity
        end
      end
    end
    local trace = ARGV[i + 6] ~= '' and ('|' .. ARGV[i + 6]) or ''
    if code then
      w.pending[#w.pending + 1] = units .. '|' .. lanes[lane].name .. '|' .. code.hash .. trace .. ':' .. user
    else
      w.pending[#w.pending + 1] = units .. trace .. ':' .. user
    end
    if keyField then
      keysHere[keyField] = orderId .. ':' .. units
      w.keys[#w.keys + 1] = keyField
      w.keys[#w.keys + 1] = keysHere[keyField]
    end
  end
  count(outcome, 1)
  outcomes[#outcomes + 1] = outcome
  outcomes[#outcomes + 1] = orderId
  if string.sub(outcome, 1, 5) == 'LANE_' then
    outcomes[#outcomes + 1] = math.max(0, inLane)
  else
    outcomes[#outcomes + 1] = field and left[field] or remaining
  end
  outcomes[#outcomes + 1] = h.units
end

if reservedAny then
  -- The total and each variant sold from (a sale without variants: the total alone).
  local counters = {}
  for f, units in pairs(left) do
    counters[#counters + 1] = f
    counters[#counters + 1] = units
  end
  redis.call('HSET', meta, 'seq', seq, 'idms', idMs, 'idn', idIndex, unpack(counters))
  for _, w in pairs(writes) do
    local newBuyers = {}
    for user, h in pairs(w.buyers) do
      newBuyers[#newBuyers + 1] = user
      newBuyers[#newBuyers + 1] = h.units .. ':' .. h.last
    end
    redis.call('HSET', w.bucket.buyers, unpack(newBuyers))
    redis.call('ZADD', w.bucket.outbox, unpack(w.outbox))
    redis.call('HSET', w.bucket.pending, unpack(w.pending))
    if #w.keys > 0 then
      redis.call('HSET', w.bucket.idempotency, unpack(w.keys))
    end
    for user, place in pairs(w.spent) do
      redis.call('HSET', w.bucket[passKeys.passes], user, place .. ':used')
      redis.call('ZREM', w.bucket[passKeys.live], user)
    end
  end
  if spentCount > 0 then
    redis.call('HINCRBY', passKeys.counters, 'used', spentCount)
  end
  for _, code in pairs(codesSpent) do
    redis.call('HSET', code.key, code.hash,
      table.concat({ code.batch, code.lane, code.uses, code.expiry, code.bound }, '|'))
  end
  for counter, n in pairs(batchCounts) do
    redis.call('HINCRBY', codeBatches, counter, n)
  end
  for s, n in pairs(laneSold) do
    redis.call('HINCRBY', meta, 'ls:' .. lanes[lane].name .. s, n)
  end
  redis.call('HSET', admission, 'tokens', tostring(tokens), 'at', nowMs)
  -- Idle long enough to refill completely, the bucket is the same as no bucket.
  redis.call('PEXPIRE', admission, math.ceil(burst * 1000 / rate) + 1000)
end
flushCounts()
local retryAfter = 0
if tokens < 1 then
  retryAfter = math.ceil((1 - tokens) * 1000 / rate)
elseif clockFull then
  retryAfter = 1
end
return reply(starts, ends, rate, burst, retryAfter, limit, outcomes)
