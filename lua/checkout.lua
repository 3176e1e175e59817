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
Replies
  an array with one reply per user, in ARGV order; each an array naming the outcome first:
  {"OK", orderId, remaining, nowMs, rate, burst}   reserved; orderId is a decimal string
  {"ALREADY_PURCHASED", orderId}      this user already holds an order
  {"SOLD_OUT", 0}
  {"RATE_LIMITED", retryAfterMs, burst, rate}   the admission bucket is empty
  {"SALE_NOT_STARTED", startsMs}
  {"SALE_ENDED", endsMs}
  {"SALE_NOT_FOUND"}
Time comes from the Redis server (TIME), never from the caller.
]]

local meta, buyers, outbox, admission = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
if #ARGV < 1 or #ARGV > 100 then
  return redis.error_reply('checkout.lua takes 1 to 100 user ids')
end
local replies = {}

local function everyone(reply)
  for i = 1, #ARGV do
    replies[i] = reply
  end
  return replies
end

local sale = redis.call('HMGET', meta, 'remaining', 'starts', 'ends', 'slot', 'rate', 'burst', 'seq')
if not sale[1] then
  return everyone({ 'SALE_NOT_FOUND' })
end
local remaining, starts, ends, slot = tonumber(sale[1]), tonumber(sale[2]), tonumber(sale[3]), tonumber(sale[4])
local rate, burst, seq = tonumber(sale[5]), tonumber(sale[6]), tonumber(sale[7]) or 0

local time = redis.call('TIME')
local nowSec = tonumber(time[1])
local nowMs = nowSec * 1000 + math.floor(tonumber(time[2]) / 1000)

if nowMs < starts then
  return everyone({ 'SALE_NOT_STARTED', starts })
end
if nowMs >= ends then
  return everyone({ 'SALE_ENDED', ends })
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

local takenHere = {}
local newBuyers, newOutbox = {}, {}
for i, user in ipairs(ARGV) do
  local held = takenHere[user] or redis.call('HGET', buyers, user)
  if held then
    replies[i] = { 'ALREADY_PURCHASED', held }
  elseif remaining <= 0 then
    replies[i] = { 'SOLD_OUT', 0 }
  elseif tokens < 1 then
    replies[i] = { 'RATE_LIMITED', math.ceil((1 - tokens) * 1000 / rate), burst, rate }
  else
    tokens, remaining, seq = tokens - 1, remaining - 1, seq + 1
    local orderId = orderIdFor(seq)
    takenHere[user] = orderId
    newBuyers[#newBuyers + 1] = user
    newBuyers[#newBuyers + 1] = orderId
    newOutbox[#newOutbox + 1] = nowMs
    newOutbox[#newOutbox + 1] = orderId .. ':' .. user
    replies[i] = { 'OK', orderId, remaining, nowMs, rate, burst }
  end
end

if #newBuyers > 0 then
  redis.call('HSET', meta, 'remaining', remaining, 'seq', seq)
  redis.call('HSET', buyers, unpack(newBuyers))
  redis.call('ZADD', outbox, unpack(newOutbox))
  redis.call('HSET', admission, 'tokens', tostring(tokens), 'at', nowMs)
  -- Idle long enough to refill completely, the bucket is the same as no bucket.
  redis.call('PEXPIRE', admission, math.ceil(burst * 1000 / rate) + 1000)
end
return replies
