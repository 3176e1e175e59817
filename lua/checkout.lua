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
admitted, unused and unexpired (queue-progress.lua admits them), and marks the pass used in
the same step as the deduct: no pass, another buyer's, a replayed or an expired one reserves
nothing. The Worker has already checked the pass's signature binds it to buyer and sale.

KEYS (all share the sale's hash tag, so the script is cluster-safe)
  1  sale meta hash  remaining, starts, ends (epoch ms), slot, seq, rate, burst, limit, state,
                     qmode (off | fifo | random), qopens, qrate, qttl (the waiting room, queue-progress.lua),
                     idms, idn (the sale's id clock: the last order id's ms and index, see idClockFull)
  2  buyers hash     user id -> "<units held>:<latest order id>"
  3  outbox zset     order ids not settled yet, score = reservation time (ms)
  4  pending hash    order id -> "<quantity>:<user id>"
  5  admission hash  token bucket: tokens, at (ms); expires when idle
  6  stats hash      this minute's outcome counters, "<epoch second>:<outcome>" -> count
  7  keys hash       "<user id>\n<Idempotency-Key>" -> "<order id>:<quantity>", for checkouts that sent one
  8  queue counters  admitted, used, expired (queue-progress.lua)
  9  passes hash     user id -> "<place>:<expiry ms>" while admitted, "<place>:used" once it bought
  10 live zset       user ids of passes not used yet, scored by expiry (ms)
ARGV
  quadruples of user id, quantity, Idempotency-Key ("" for none) and the place its Queue-Pass
  names ("" for none): 1 to 100 quadruples
Reply: one flat array in one layout, whatever the outcomes (src/checkout/reply.ts reads it)
  1  "checkout/4"     the layout; the Worker refuses any other
  2  nowMs            Redis time of the call
  3  startsMs  4  endsMs         the sale window (0 when the sale is not found)
  5  rate      6  burst          the admission bucket (0 when the sale is not found)
  7  retryAfterMs     how long until the bucket holds a token again (0 when it holds one)
  8  limit            units one buyer may hold (0 when the sale is not found)
  9  seq              the sale's order sequence after the call: ids it minted ever (the ids
                      this call minted are the last ones; 0 when the sale is not found)
  then four fields per buyer, in ARGV order:
     outcome   OK | REPEATED | KEY_REUSED | ALREADY_PURCHASED | PER_USER_LIMIT_EXCEEDED |
               SOLD_OUT | QUANTITY_UNAVAILABLE | RATE_LIMITED | SALE_NOT_STARTED | SALE_ENDED |
               SALE_PAUSED | SALE_CANCELLED | SALE_NOT_FOUND | QUEUE_PASS_REQUIRED |
               QUEUE_PASS_INVALID | QUEUE_PASS_USED | QUEUE_PASS_EXPIRED
               REPEATED: this buyer's Idempotency-Key already reserved orderId (nothing new is
               reserved: a retry never buys twice); KEY_REUSED: it did, for another quantity;
               RATE_LIMITED: the admission bucket is empty, or (field 7 then 1) the sale minted
               all the ids its clock allows in this millisecond
     orderId   the order reserved now (OK) or before (REPEATED), or the buyer's latest one, else ""
     remaining units left after this buyer (0 when the sale is not found)
     held      units the buyer holds after this buyer's turn
Time comes from the Redis server (TIME), never from the caller.
]]

local meta, buyers, outbox, pending, admission, stats, idempotency, queueCounters, passes, livePasses =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local buyerCount = #ARGV / 4
if #ARGV < 4 or #ARGV > 400 or #ARGV % 4 ~= 0 then
  return redis.error_reply('checkout.lua takes 1 to 100 quadruples of user id, quantity, idempotency key and pass place')
end

local time = redis.call('TIME')
local nowSec = tonumber(time[1])
local nowMs = nowSec * 1000 + math.floor(tonumber(time[2]) / 1000)

local seq = 0 -- the sale's order sequence: ids minted so far
local function reply(starts, ends, rate, burst, retryAfter, limit, outcomes)
  return { 'checkout/4', nowMs, starts, ends, rate, burst, retryAfter, limit, seq, unpack(outcomes) }
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

local sale = redis.call('HMGET', meta, 'remaining', 'starts', 'ends', 'slot', 'rate', 'burst', 'seq', 'limit', 'state', 'qmode')
if not sale[1] then
  return reply(0, 0, 0, 0, 0, 0, everyone('SALE_NOT_FOUND', 0))
end
local remaining, starts, ends, slot = tonumber(sale[1]), tonumber(sale[2]), tonumber(sale[3]), tonumber(sale[4])
local rate, burst, limit = tonumber(sale[5]), tonumber(sale[6]), tonumber(sale[8]) or 1
seq = tonumber(sale[7]) or 0
local queued = sale[10] == 'fifo' or sale[10] == 'random'

local saleWide
if sale[9] == 'cancelled' then
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
local function holding(user)
  local h = holdings[user]
  if not h then
    local record = redis.call('HGET', buyers, user)
    local units, last = 0, ''
    if record then
      local u, o = string.match(record, '^(%d+):(%d*)$')
      units, last = tonumber(u), o
    end
    h = { units = units, last = last }
    holdings[user] = h
  end
  return h
end

-- Why a queued sale's buyer may not buy with the pass naming `place`, if they may not.
local spent, spentCount = {}, 0 -- passes this call used: user id -> place
local function passProblem(user, place)
  if place == '' then
    return 'QUEUE_PASS_REQUIRED'
  elseif spent[user] then
    return 'QUEUE_PASS_USED'
  end
  local admittedPlace, expiry = string.match(redis.call('HGET', passes, user) or '', '^(%d+):(%w+)$')
  if admittedPlace ~= place then
    return 'QUEUE_PASS_INVALID' -- never admitted, or a pass of another place
  elseif expiry == 'used' then
    return 'QUEUE_PASS_USED'
  elseif tonumber(expiry) <= nowMs then
    return 'QUEUE_PASS_EXPIRED'
  end
  return nil
end

local outcomes, reserved, newOutbox, newPending, newKeys = {}, {}, {}, {}, {}
local keysHere = {}
for i = 1, #ARGV, 4 do
  local user, quantity, key, place = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2], ARGV[i + 3]
  local h = holding(user)
  local outcome, orderId = 'OK', h.last
  local keyField = key ~= '' and (user .. '\n' .. key) or nil
  local before = keyField and (keysHere[keyField] or redis.call('HGET', idempotency, keyField))
  -- A retry of a reservation made (REPEATED) needs no pass: its pass was used by that reservation.
  local passRefusal = not before and queued and passProblem(user, place)
  if before then
    local o, q = string.match(before, '^(%d+):(%d+)$')
    orderId = o
    if tonumber(q) == quantity then
      outcome = 'REPEATED'
    else
      outcome = 'KEY_REUSED'
    end
  elseif passRefusal then
    outcome = passRefusal
  elseif h.units >= limit then
    outcome = 'ALREADY_PURCHASED'
  elseif h.units + quantity > limit then
    outcome = 'PER_USER_LIMIT_EXCEEDED'
  elseif remaining <= 0 then
    outcome = 'SOLD_OUT'
  elseif remaining < quantity then
    outcome = 'QUANTITY_UNAVAILABLE'
  elseif tokens < 1 or idClockFull() then
    outcome = 'RATE_LIMITED'
  else
    tokens, remaining, seq = tokens - 1, remaining - quantity, seq + 1
    orderId = nextOrderId()
    h.units, h.last = h.units + quantity, orderId
    reserved[user] = h
    if queued then
      spent[user] = place
      spentCount = spentCount + 1
    end
    newOutbox[#newOutbox + 1] = nowMs
    newOutbox[#newOutbox + 1] = orderId
    newPending[#newPending + 1] = orderId
    newPending[#newPending + 1] = quantity .. ':' .. user
    if keyField then
      keysHere[keyField] = orderId .. ':' .. quantity
      newKeys[#newKeys + 1] = keyField
      newKeys[#newKeys + 1] = keysHere[keyField]
    end
  end
  count(outcome, 1)
  outcomes[#outcomes + 1] = outcome
  outcomes[#outcomes + 1] = orderId
  outcomes[#outcomes + 1] = remaining
  outcomes[#outcomes + 1] = h.units
end

if #newOutbox > 0 then
  local newBuyers = {}
  for user, h in pairs(reserved) do
    newBuyers[#newBuyers + 1] = user
    newBuyers[#newBuyers + 1] = h.units .. ':' .. h.last
  end
  redis.call('HSET', meta, 'remaining', remaining, 'seq', seq, 'idms', idMs, 'idn', idIndex)
  redis.call('HSET', buyers, unpack(newBuyers))
  redis.call('ZADD', outbox, unpack(newOutbox))
  redis.call('HSET', pending, unpack(newPending))
  if #newKeys > 0 then
    redis.call('HSET', idempotency, unpack(newKeys))
  end
  if spentCount > 0 then
    for user, place in pairs(spent) do
      redis.call('HSET', passes, user, place .. ':used')
      redis.call('ZREM', livePasses, user)
    end
    redis.call('HINCRBY', queueCounters, 'used', spentCount)
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
