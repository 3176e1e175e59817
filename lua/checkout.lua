--[[
checkout.lua: reserve one unit of a flash sale for one user, atomically.

Everything that must not interleave happens here, in one EVALSHA: the sale window,
one-order-per-user, stock > 0, the sale's admission token bucket, the decrement,
recording the buyer, minting the order id and writing the outbox record the
settlement pipeline re-drives from. Refusals before the bucket write nothing, so a
sold-out sale or a repeat buyer never spends a token nor hides behind a 429.

KEYS (all share the sale's hash tag, so the script is cluster-safe)
  1  sale meta hash  fields: remaining, starts, ends (epoch ms), slot, seq, rate, burst
  2  buyers hash     user id -> order id
  3  outbox zset     member "<orderId>:<userId>", score = reservation time (ms)
  4  admission hash  token bucket: tokens, at (ms); expires when idle
ARGV
  1  user id
Replies (an array; the first element names the outcome)
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
local user = ARGV[1]

local sale = redis.call('HMGET', meta, 'remaining', 'starts', 'ends', 'slot', 'rate', 'burst')
if not sale[1] then
  return { 'SALE_NOT_FOUND' }
end
local remaining, starts, ends, slot = tonumber(sale[1]), tonumber(sale[2]), tonumber(sale[3]), tonumber(sale[4])
local rate, burst = tonumber(sale[5]), tonumber(sale[6])

local time = redis.call('TIME')
local nowSec = tonumber(time[1])
local nowMs = nowSec * 1000 + math.floor(tonumber(time[2]) / 1000)

if nowMs < starts then
  return { 'SALE_NOT_STARTED', starts }
end
if nowMs >= ends then
  return { 'SALE_ENDED', ends }
end

local held = redis.call('HGET', buyers, user)
if held then
  return { 'ALREADY_PURCHASED', held }
end
if remaining <= 0 then
  return { 'SOLD_OUT', 0 }
end

-- Admission: a token bucket refilled at `rate` per second up to `burst`, so units are
-- reserved (and reach the queue and D1) no faster than the sale was configured to take.
local bucket = redis.call('HMGET', admission, 'tokens', 'at')
local tokens = tonumber(bucket[1]) or burst
local at = tonumber(bucket[2]) or nowMs
tokens = math.min(burst, tokens + math.max(0, nowMs - at) * rate / 1000)
if tokens < 1 then
  return { 'RATE_LIMITED', math.ceil((1 - tokens) * 1000 / rate), burst, rate }
end
redis.call('HSET', admission, 'tokens', tostring(tokens - 1), 'at', nowMs)
-- Idle long enough to refill completely, the bucket is the same as no bucket.
redis.call('PEXPIRE', admission, math.ceil(burst * 1000 / rate) + 1000)

remaining = redis.call('HINCRBY', meta, 'remaining', -1)
local seq = redis.call('HINCRBY', meta, 'seq', 1)

-- Order id = (seconds since 2026-01-01 UTC) << 32 | slot << 20 | (seq mod 2^20).
-- Lua numbers are doubles, so the 63-bit decimal is assembled from exact parts:
-- hi * 2^32 + lo, with 2^32 = 4294 * 10^6 + 967296.
local hi = nowSec - 1767225600
local lo = slot * 1048576 + (seq % 1048576)
local low = hi * 967296 + lo
local upper = hi * 4294 + math.floor(low / 1000000)
local orderId
if upper > 0 then
  orderId = string.format('%.0f%06d', upper, low % 1000000)
else
  orderId = string.format('%.0f', low % 1000000)
end

redis.call('HSET', buyers, user, orderId)
redis.call('ZADD', outbox, nowMs, orderId .. ':' .. user)
return { 'OK', orderId, remaining, nowMs, rate, burst }
