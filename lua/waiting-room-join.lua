#!lua flags=allow-key-locking
--[[
waiting-room-join.lua: put a buyer in a sale's waiting room, once; joining again answers the same place.

A fifo sale places every joiner in arrival order. A random sale keeps its pre-queue (joiners
before startsAt) unplaced: each goes into a sorted set as "<draw key>:<bucket>:<user id>" with
score 0, so the set's lexical order is the draw; the pre-queue is split into the sale's buckets
by the draw key's leading bits (bucket after bucket is the draw in order). The draw key is HMAC-SHA256(seed, user id) in hex,
computed by the Worker under the sale's secret seed (published as its SHA-256, revealed once
the sale ends), so anyone can recompute the order afterwards. At the start the pre-queue stops
growing and a pre-queue joiner's place is its rank in it (the sizes of the buckets before its
own, plus its rank in its own); those who join after the start go
behind, in arrival order. Nothing is rewritten at the start: no draw step, no burst of writes.

KEYS (all share the sale's hash tag; docs/architecture.md, "The sale's Redis layout")
  1  sale meta hash   qmode (off | fifo | random), qopens, starts, ends (epoch ms), state, buckets
  2  counters hash    lined: ranks given in the line so far (waiting-room-progress.lua's counters)
  3  places hash      the joiner's bucket's: user id -> place, or "pre" while a random sale's
                      pre-queue joiner is unplaced
  4  line zset        the joiner's bucket's: user id -> rank in the line after the pre-queue
  then one key per bucket, bucket 0 first:
  +1 pre-queue zset   "<draw key hex>:<bucket>:<user id>", all scores 0 (random sales only), of
                      the draw keys in the bucket's range
  (a pre-queue member carries the user's bucket beside the id, a line member is in the user's
  bucket's line, so waiting-room-progress.lua writes an admitted user's pass into the user's bucket)
The line is split by the joiner's bucket, not by range of place: a script names every key it
touches in KEYS, and the Worker does not know a joiner's place before the join (it would need
a read first, a second round trip racing other joins, or every segment's key in each call),
but it knows the joiner's bucket from the user id. One counter gives the ranks, so they stay
1..n in arrival order whichever buckets they land in; waiting-room-progress.lua, which names every
bucket anyway, admits by rank across them. A bucket's line holds one member per joiner of the
bucket, as its places hash does, so the bucket count that sizes the one sizes the other.
ARGV
  1  user id   2  draw key: 64 hex characters for a random sale, else ""
  3  the bucket count KEYS[3] and KEYS[4] were chosen by: when it is not the sale's (meta
     `buckets`, 1 when absent), nothing is done and the reply is BUCKETS_CHANGED
  4  the user's bucket (0-based), which KEYS[3] and KEYS[4] belong to
  5  the pre-queue bucket (0-based) of the draw key (0 without one)
Reply
  { "waiting-room-join/1", nowMs, outcome, place, startsMs, endsMs }
  outcome  JOINED (now or before) | NOT_OPEN (before qopens) | OFF (no waiting room) |
           CLOSED (ended or cancelled, and the buyer never joined) | NOT_FOUND | BUCKETS_CHANGED
  place    1-based; 0 while unplaced (a random sale's pre-queue) or when not JOINED
Time comes from the Redis server (TIME).
]]

local meta, counters, places, line = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local SALE_KEYS = 4
local user, drawKey, splitBy, bucket, preBucket = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
local preBuckets = #KEYS - SALE_KEYS
if not preBucket or preBucket < 0 or preBucket >= preBuckets then
  return redis.error_reply('waiting-room-join.lua: the pre-queue bucket must name one of the KEYS after the fourth')
end
-- Pre-queue joiners in buckets before `b` (0-based), and in all when b is preBuckets.
local function drawnBefore(b)
  local n = 0
  for q = 0, b - 1 do
    n = n + redis.call('ZCARD', KEYS[SALE_KEYS + 1 + q])
  end
  return n
end
local time = redis.call('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local sale = redis.call('HMGET', meta, 'qmode', 'qopens', 'starts', 'ends', 'state', 'buckets')
local starts, ends = tonumber(sale[3]) or 0, tonumber(sale[4]) or 0
local function reply(outcome, place)
  return { 'waiting-room-join/1', nowMs, outcome, place, starts, ends }
end
if not sale[3] then
  return reply('NOT_FOUND', 0)
end
if (tonumber(sale[6]) or 1) ~= splitBy or preBuckets ~= splitBy then
  return reply('BUCKETS_CHANGED', 0)
end
local mode = sale[1] or 'off'
if mode == 'off' then
  return reply('OFF', 0)
end
local random = mode == 'random'
local member = drawKey .. ':' .. bucket .. ':' .. user

local known = redis.call('HGET', places, user)
if known == 'pre' then
  if nowMs < starts then
    return reply('JOINED', 0)
  end
  return reply('JOINED', drawnBefore(preBucket) + redis.call('ZRANK', KEYS[SALE_KEYS + 1 + preBucket], member) + 1)
elseif known then
  return reply('JOINED', tonumber(known))
end

if sale[5] == 'cancelled' or nowMs >= ends then
  return reply('CLOSED', 0)
end
if nowMs < tonumber(sale[2]) then
  return reply('NOT_OPEN', 0)
end
if random and nowMs < starts then
  redis.call('ZADD', KEYS[SALE_KEYS + 1 + preBucket], 0, member)
  redis.call('HSET', places, user, 'pre')
  return reply('JOINED', 0)
end
local rank = redis.call('HINCRBY', counters, 'lined', 1)
redis.call('ZADD', line, rank, user)
local place = rank + drawnBefore(preBuckets)
redis.call('HSET', places, user, place)
return reply('JOINED', place)
