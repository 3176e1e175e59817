--[[
checkout.lua: reserve one unit of a flash sale for each of a batch of users, atomically.

Everything that must not interleave happens here, in one EVALSHA: the sale window,
one-order-per-user, stock > 0, the sale's admission token bucket, the decrement,
recording the buyer, minting the order id and writing the outbox record the
settlement pipeline re-drives from. An isolate merges the checkouts it holds for one
sale into one call, so users are served in ARGV order, each seeing what the ones
before it took: a user listed twice gets one unit and ALREADY_PURCHASED. Refusals
before the bucket write nothing, so a sold-out sale or a repeat buyer never spends a
token nor hides behind a 429.

KEYS (all share the sale's hash tag, so the script is cluster-safe)
  1  sale meta hash  fields: remaining, starts, ends (epoch ms), slot, seq, rate, burst
  2  buyers hash     user id -> order id
  3  outbox zset     member "<orderId>:<userId>", score = reservation time (ms)
  4  admission hash  token bucket: tokens, at (ms); expires when idle
ARGV
  1..n  user ids, 1 to 100 (more is an error: the writes at the end unpack 2n values)
Reply: one flat array in one layout, whatever the outcomes (src/checkout/reply.ts reads it)
  1  "checkout/1"     the layout; the Worker refuses any other
  2  nowMs            Redis time of the call
  3  startsMs  4  endsMs         the sale window (0 when the sale is not found)
  5  rate      6  burst          the admission bucket (0 when the sale is not found)
  7  retryAfterMs     how long until the bucket holds a token again (0 when it holds one)
  then three fields per user, in ARGV order:
     outcome   OK | ALREADY_PURCHASED | SOLD_OUT | RATE_LIMITED | SALE_NOT_STARTED |
               SALE_ENDED | SALE_NOT_FOUND
     orderId   the order reserved now (OK) or held already (ALREADY_PURCHASED), else ""
     remaining units left after this user (0 when the sale is not found)
Time comes from the Redis server (TIME), never from the caller.
]]

local meta, buyers, outbox, admission = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
if #ARGV < 1 or #ARGV > 100 then
  return redis.error_reply('checkout.lua takes 1 to 100 user ids')
end

local time = redis.call('TIME')
local nowSec = tonumber(time[1])
local nowMs = nowSec * 1000 + math.floor(tonumber(time[2]) / 1000)

local function reply(starts, ends, rate, burst, retryAfter, outcomes)
  return { 'checkout/1', nowMs, starts, ends, rate, burst, retryAfter, unpack(outcomes) }
end

local function everyone(outcome, remaining)
  local outcomes = {}
  for _ = 1, #ARGV do
    outcomes[#outcomes + 1] = outcome
    outcomes[#outcomes + 1] = ''
    outcomes[#outcomes + 1] = remaining
  end
  return outcomes
end

local sale = redis.call('HMGET', meta, 'remaining', 'starts', 'ends', 'slot', 'rate', 'burst', 'seq')
if not sale[1] then
  return reply(0, 0, 0, 0, 0, everyone('SALE_NOT_FOUND', 0))
end
local remaining, starts, ends, slot = tonumber(sale[1]), tonumber(sale[2]), tonumber(sale[3]), tonumber(sale[4])
local rate, burst, seq = tonumber(sale[5]), tonumber(sale[6]), tonumber(sale[7]) or 0

if nowMs < starts then
  return reply(starts, ends, rate, burst, 0, everyone('SALE_NOT_STARTED', remaining))
end
if nowMs >= ends then
  return reply(starts, ends, rate, burst, 0, everyone('SALE_ENDED', remaining))
end

-- Admission: a token bucket refilled at `rate` per second up to `burst`, so units are
-- reserved (and reach the queue and D1) no faster than the sale was configured to take.
local bucket = redis.call('HMGET', admission, 'tokens', 'at')
local tokens = tonumber(bucket[1]) or burst
local at = tonumber(bucket[2]) or nowMs
tokens = math.min(burst, tokens + math.max(0, nowMs - at) * rate / 1000)

-- Order id = (seconds since 2026-01-01 UTC) << 32 | slot << 20 | (seq mod 2^20).
-- Lua numbers are doubles, so the 63-bit decimal is assembled from exact parts:
-- hi * 2^32 + lo, with 2^32 = 4294 * 10^6 + 967296.
local hi = nowSec - 1767225600
local function orderIdFor(n)
  local lo = slot * 1048576 + (n % 1048576)
  local low = hi * 967296 + lo
  local upper = hi * 4294 + math.floor(low / 1000000)
  if upper > 0 then
    return string.format('%.0f%06d', upper, low % 1000000)
  end
  return string.format('%.0f', low % 1000000)
end

local outcomes = {}
local takenHere = {}
local newBuyers, newOutbox = {}, {}
for _, user in ipairs(ARGV) do
  local held = takenHere[user] or redis.call('HGET', buyers, user)
  local outcome, orderId = 'OK', ''
  if held then
    outcome, orderId = 'ALREADY_PURCHASED', held
  elseif remaining <= 0 then
    outcome = 'SOLD_OUT'
  elseif tokens < 1 then
    outcome = 'RATE_LIMITED'
  else
    tokens, remaining, seq = tokens - 1, remaining - 1, seq + 1
    orderId = orderIdFor(seq)
    takenHere[user] = orderId
    newBuyers[#newBuyers + 1] = user
    newBuyers[#newBuyers + 1] = orderId
    newOutbox[#newOutbox + 1] = nowMs
    newOutbox[#newOutbox + 1] = orderId .. ':' .. user
  end
  outcomes[#outcomes + 1] = outcome
  outcomes[#outcomes + 1] = orderId
  outcomes[#outcomes + 1] = remaining
end

if #newBuyers > 0 then
  redis.call('HSET', meta, 'remaining', remaining, 'seq', seq)
  redis.call('HSET', buyers, unpack(newBuyers))
  redis.call('ZADD', outbox, unpack(newOutbox))
  redis.call('HSET', admission, 'tokens', tostring(tokens), 'at', nowMs)
  -- Idle long enough to refill completely, the bucket is the same as no bucket.
  redis.call('PEXPIRE', admission, math.ceil(burst * 1000 / rate) + 1000)
end
local retryAfter = 0
if tokens < 1 then
  retryAfter = math.ceil((1 - tokens) * 1000 / rate)
end
return reply(starts, ends, rate, burst, retryAfter, outcomes)
