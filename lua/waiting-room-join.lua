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

A quiet joiner (ARGV 6: a caller that loses quietly, src/admission/gate.ts) takes a place as
anyone does, so nobody else ever holds it and it stays the same when they join again, but the
place never comes up: its line member is "\1<user id>" and its pre-queue member
"<draw key>:q<bucket>:<user id>", which waiting-room-progress.lua lets in as nobody's (a pass
record marked quiet, lapsed at once). Its places entry is the place (or "pre") after a "q".

A sale with presale lanes has a line of its own for each lane (ARGV 7 names it; docs/lanes.md,
"Lanes with a waiting room"), with keys of its own and the sale's mode: it opens as long before
the lane's start as the public line opens before the public start (qopens), places from the
lane's start, and closes at the next lane's start or the public start. It takes code holders
only: a new joiner's access code (ARGV 8, its hash) must be known, not revoked or expired, of
the line's lane or an earlier one, bound to nobody else and have a use left, as lua/checkout.lua
reads codes; the join binds it to the joiner (one code queues one account) and spends no use.

The join costs the same whatever the bucket count: it names the joiner's bucket and the one
range of the pre-queue its draw key falls in, and reads running totals kept with the writes
(counters `drawn`; the Fenwick tree of the pre-queue's bucket sizes, KEYS[6]), never every
bucket. A sale whose totals are missing (none joined its pre-queue yet, or it was stored before
they were kept) is answered TOTALS_MISSING, with nothing written: waiting-room-progress.lua,
which names every bucket, sets them.

KEYS (all share the sale's hash tag; docs/architecture.md, "The sale's Redis layout"); 2 to 6 are the line's
  1  sale meta hash   qmode (off | fifo | random), qopens, starts, ends (epoch ms), state, buckets, lanes
  2  counters hash    lined: ranks given in the line so far; drawn: the pre-queue's joiners
  3  places hash      the joiner's bucket's: user id -> place, or "pre" while a random sale's
                      pre-queue joiner is unplaced ("q" before either for a quiet joiner)
  4  line zset        the joiner's bucket's: user id -> rank in the line after the pre-queue
  5  pre-queue zset   the draw key's bucket's range of the pre-queue (bucket 0's without one):
                      "<draw key hex>:<bucket>:<user id>" ("q<bucket>" for a quiet joiner), all
                      scores 0 (random sales only)
  6  draw sizes       string: Fenwick tree of the pre-queue's size per bucket, u32 #1..#buckets
  then, for a lane's line when ARGV 8 names a code (see lua/checkout.lua for both):
  7  code batches     "<batch id>:revoked" -> 1, "<batch id>:bound" -> count
  8  code shard       code hash -> "<batch id>|<lane>|<uses left>|<expiry ms, 0: none>|<bound user id, or empty>"
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
  3  the bucket count the KEYS were chosen by: when it is not the sale's (meta `buckets`, 1
     when absent), nothing is done and the reply is BUCKETS_CHANGED
  4  the user's bucket (0-based), which KEYS[3] and KEYS[4] belong to
  5  the pre-queue bucket (0-based) of the draw key (0 without one), which KEYS[5] is
  6  "1": a quiet joiner (when the user id joins for the first time); "0": a person
  7  the line: "" (or absent) the public line, else the lane whose line KEYS 2 to 6 are
  8  a lane's line: the hash of the joiner's access code ("" or absent: none)
Reply
  { "waiting-room-join/3", nowMs, outcome, place, startsMs, endsMs, quiet, fresh }
  outcome  JOINED (now or before) | NOT_OPEN (before the line opens) | OFF (no waiting room) |
           CLOSED (the line closed or the sale was cancelled, and the buyer never joined) | NOT_FOUND
           (the sale, or the line's lane) | BUCKETS_CHANGED | TOTALS_MISSING |
           ACCESS_CODE_REQUIRED | ACCESS_CODE_INVALID | ACCESS_CODE_USED (a lane's line, a new joiner's code)
  startsMs, endsMs  the line's: when it places from, when it closes
  place    1-based; 0 while unplaced (a random sale's pre-queue) or when not JOINED
  quiet    1 when the place is a quiet one (whatever ARGV 6 said on a later join), else 0
  fresh    1 when this call placed the buyer (a join the funnel counts), 0 when it answered a
           place held before or did not join
Time comes from the Redis server (TIME).
]]

local meta, counters, places, line, preQueue, drawSizes = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local user, drawKey, splitBy, bucket, preBucket = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
local quietJoin = ARGV[6] == '1'
local lineLane, code = ARGV[7] or '', ARGV[8] or ''
local time = redis.call('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local sale = redis.call('HMGET', meta, 'qmode', 'qopens', 'starts', 'ends', 'state', 'buckets', 'lanes')
local opens, starts, ends = tonumber(sale[2]) or 0, tonumber(sale[3]) or 0, tonumber(sale[4]) or 0
local function reply(outcome, place, quiet, fresh)
  return { 'waiting-room-join/3', nowMs, outcome, place, starts, ends, quiet and 1 or 0, fresh and 1 or 0 }
end
if not sale[3] then
  return reply('NOT_FOUND', 0, false)
end
if (tonumber(sale[6]) or 1) ~= splitBy or not preBucket or preBucket < 0 or preBucket >= splitBy then
  return reply('BUCKETS_CHANGED', 0, false)
end
-- A lane's line: its window, and each lane's rank (a code of the line's lane or an earlier one joins it).
local laneRank, lineRank = {}, 0
if lineLane ~= '' then
  local laneStarts = {}
  for name, from in string.gmatch(sale[7] or '', '([^,=]+)=(%d+)') do
    laneStarts[#laneStarts + 1] = tonumber(from)
    laneRank[name] = #laneStarts
  end
  lineRank = laneRank[lineLane] or 0
  if lineRank == 0 then
    return reply('NOT_FOUND', 0, false)
  end
  -- It opens as long before the lane's start as the public line before the public start, and
  -- closes at the next lane's start or the public start.
  opens, starts, ends = laneStarts[lineRank] - (starts - opens), laneStarts[lineRank], laneStarts[lineRank + 1] or starts
end
local mode = sale[1] or 'off'
if mode == 'off' then
  return reply('OFF', 0, false)
end
local random = mode == 'random'
-- A fifo sale's pre-queue is empty: its mode is fixed before joining opens.
local drawn = tonumber(redis.call('HGET', counters, 'drawn'))
if random and not drawn then
  return reply('TOTALS_MISSING', 0, false)
end
drawn = drawn or 0

-- The Fenwick tree's fields a bucket's size touches: i (1-based) and the next by its lowest set
-- bit (Lua 5.1 here has no bit operators Upstash is sure to offer: the bit is found by halving).
local function lowestBit(i)
  local bit = 1
  while i % (bit * 2) == 0 do
    bit = bit * 2
  end
  return bit
end
-- Pre-queue joiners in buckets before `b` (0-based): one BITFIELD of at most log2(buckets) reads.
local function drawnBefore(b)
  local ops, i = {}, b
  while i > 0 do
    ops[#ops + 1], ops[#ops + 2], ops[#ops + 3] = 'GET', 'u32', '#' .. i
    i = i - lowestBit(i)
  end
  if #ops == 0 then
    return 0
  end
  local sum = 0
  for _, size in ipairs(redis.call('BITFIELD', drawSizes, unpack(ops))) do
    sum = sum + size
  end
  return sum
end
local function countDrawn(b)
  local ops, i = {}, b + 1
  while i <= splitBy do
    ops[#ops + 1], ops[#ops + 2], ops[#ops + 3], ops[#ops + 4] = 'INCRBY', 'u32', '#' .. i, 1
    i = i + lowestBit(i)
  end
  redis.call('BITFIELD', drawSizes, unpack(ops))
  redis.call('HINCRBY', counters, 'drawn', 1)
end
local function preMember(quiet)
  return drawKey .. ':' .. (quiet and 'q' or '') .. bucket .. ':' .. user
end

local known = redis.call('HGET', places, user)
if known then
  local quiet = string.sub(known, 1, 1) == 'q'
  local held = quiet and string.sub(known, 2) or known
  if held ~= 'pre' then
    return reply('JOINED', tonumber(held), quiet)
  end
  if nowMs < starts then
    return reply('JOINED', 0, quiet)
  end
  -- A quiet member stored before members carried their bucket is "<draw key>:q:<user id>".
  local rank = redis.call('ZRANK', preQueue, preMember(quiet))
    or (quiet and redis.call('ZRANK', preQueue, drawKey .. ':q:' .. user))
  return reply('JOINED', drawnBefore(preBucket) + rank + 1, quiet)
end

if sale[5] == 'cancelled' or nowMs >= ends then
  return reply('CLOSED', 0, false)
end
if nowMs < opens then
  return reply('NOT_OPEN', 0, false)
end
if lineRank > 0 then
  -- A lane's line: the code, read as lua/checkout.lua reads it, then bound to the joiner.
  local codeBatches, shard = KEYS[7], KEYS[8]
  if code == '' or not shard then
    return reply('ACCESS_CODE_REQUIRED', 0, false)
  end
  local record = redis.call('HGET', shard, code)
  local batch, codeLane, uses, expiry, bound = string.match(record or '', '^([^|]+)|([^|]+)|(%d+)|(%d+)|(.*)$')
  if not batch or redis.call('HEXISTS', codeBatches, batch .. ':revoked') == 1
    or (tonumber(expiry) > 0 and tonumber(expiry) <= nowMs) or (bound ~= '' and bound ~= user)
    or not laneRank[codeLane] or laneRank[codeLane] > lineRank then
    return reply('ACCESS_CODE_INVALID', 0, false)
  elseif tonumber(uses) <= 0 then
    return reply('ACCESS_CODE_USED', 0, false)
  elseif bound == '' then
    redis.call('HSET', shard, code, table.concat({ batch, codeLane, uses, expiry, user }, '|'))
    redis.call('HINCRBY', codeBatches, batch .. ':bound', 1)
  end
end
local tag = quietJoin and 'q' or ''
if random and nowMs < starts then
  redis.call('ZADD', preQueue, 0, preMember(quietJoin))
  countDrawn(preBucket)
  redis.call('HSET', places, user, tag .. 'pre')
  return reply('JOINED', 0, quietJoin, true)
end
local rank = redis.call('HINCRBY', counters, 'lined', 1)
redis.call('ZADD', line, rank, (quietJoin and '\1' or '') .. user)
local place = rank + drawn
redis.call('HSET', places, user, tag .. place)
return reply('JOINED', place, quietJoin, true)
