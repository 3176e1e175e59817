#!lua flags=allow-key-locking
--[[
queue-join.lua: put a buyer in a sale's waiting room, once; joining again answers the same place.

A fifo sale places every joiner in arrival order. A random sale keeps its pre-queue (joiners
before startsAt) unplaced: each goes into a sorted set as "<draw key>:<user id>" with score 0,
so the set's lexical order is the draw. The draw key is HMAC-SHA256(seed, user id) in hex,
computed by the Worker under the sale's secret seed (published as its SHA-256, revealed once
the sale ends), so anyone can recompute the order afterwards. At the start the set stops
growing and a pre-queue joiner's place is its rank in it; those who join after the start go
behind, in arrival order. Nothing is rewritten at the start: no draw step, no burst of writes.

KEYS (all share the sale's hash tag; docs/architecture.md, "A sale in Redis")
  1  sale meta hash   qmode (off | fifo | random), qopens, starts, ends (epoch ms), state, buckets
  2  places hash      the joiner's bucket's: user id -> place, or "pre" while a random sale's
                      pre-queue joiner is unplaced
  3  pre-queue zset   "<draw key hex>:<bucket>:<user id>", all scores 0 (random sales only)
  4  line list        "<bucket>:<user id>" in arrival order, placed after the pre-queue
  (the bucket travels with the user id, so queue-progress.lua writes an admitted user's pass
  into the user's bucket)
ARGV
  1  user id   2  draw key: 64 hex characters for a random sale, else ""
  3  the bucket count KEYS[2] was chosen by: when it is not the sale's (meta `buckets`, 1 when
     absent), nothing is done and the reply is BUCKETS_CHANGED
  4  the user's bucket (0-based), which KEYS[2] belongs to
Reply
  { "queue-join/1", nowMs, outcome, place, startsMs, endsMs }
  outcome  JOINED (now or before) | NOT_OPEN (before qopens) | OFF (no waiting room) |
           CLOSED (ended or cancelled, and the buyer never joined) | NOT_FOUND | BUCKETS_CHANGED
  place    1-based; 0 while unplaced (a random sale's pre-queue) or when not JOINED
Time comes from the Redis server (TIME).
]]

local meta, places, pre, line = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local user, drawKey, splitBy, bucket = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local time = redis.call('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local sale = redis.call('HMGET', meta, 'qmode', 'qopens', 'starts', 'ends', 'state', 'buckets')
local starts, ends = tonumber(sale[3]) or 0, tonumber(sale[4]) or 0
local function reply(outcome, place)
  return { 'queue-join/1', nowMs, outcome, place, starts, ends }
end
if not sale[3] then
  return reply('NOT_FOUND', 0)
end
if (tonumber(sale[6]) or 1) ~= splitBy then
  return reply('BUCKETS_CHANGED', 0)
end
local mode = sale[1] or 'off'
if mode == 'off' then
  return reply('OFF', 0)
end
local random = mode == 'random'
local entry = bucket .. ':' .. user
local member = drawKey .. ':' .. entry

local known = redis.call('HGET', places, user)
if known == 'pre' then
  if nowMs < starts then
    return reply('JOINED', 0)
  end
  return reply('JOINED', redis.call('ZRANK', pre, member) + 1)
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
  redis.call('ZADD', pre, 0, member)
  redis.call('HSET', places, user, 'pre')
  return reply('JOINED', 0)
end
local place = redis.call('RPUSH', line, entry) + redis.call('ZCARD', pre)
redis.call('HSET', places, user, place)
return reply('JOINED', place)
