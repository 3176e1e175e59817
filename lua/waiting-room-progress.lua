#!lua flags=allow-key-locking
--[[
waiting-room-progress.lua: move a sale's waiting room forward to now, and read where it stands.

Each isolate calls it at most about once a second per sale and answers every poll in between
from the reply, so a poll costs no Redis command of its own.

Admission: once the sale starts, every place up to `admitted` is let in, where
  admitted = min(joined,
                 paced:  floor(ms since start * qrate / 1000) + qrate (a second's worth at the start),
                 units:  used + expired + remaining)
The third bound ties the line to the stock: passes alive (admitted, neither used nor expired)
never outnumber the units left, so nobody is admitted to a sale already sold out. A pass that
expires, or an order cancelled or expired (its units come back to `remaining`), lets the next
place in; a pass used takes its unit with it. An admitted place gets a pass record valid qttl
seconds. A call admits at most ARGV[1] places; the next call goes on. A quiet joiner's place
(waiting-room-join.lua: a line member "\1<user id>", a pre-queue member "<draw key>:q:<user id>")
is let in as nobody's: no pass, and counted expired at once, so it holds no unit back.

A presale lane's own line (ARGV 3; docs/lanes.md, "Lanes with a waiting room") moves the same
way over its own keys, from the lane's start until the next lane's start or the public start
(its startsMs and endsMs in the reply), and its units bound is what the lane may still sell: its
allotment and those of the capped lanes right before it, less what they sold (as
lua/checkout.lua counts it), never more than the sale's remaining.

It also keeps waiting-room-join.lua's running totals true (counters `drawn` and the Fenwick tree
of the pre-queue's bucket sizes): it reads every bucket's size anyway, and when `drawn` is
missing (a sale stored before the totals were kept, or none joined its pre-queue yet) or is
not their sum (a join by a Worker that did not keep them), it writes them afresh.

KEYS (all share the sale's hash tag; docs/architecture.md, "The sale's Redis layout"); all but 1 are the line's
  1  sale meta hash   qmode, qrate, qttl, starts, ends, state, remaining, buckets, lanes, la:<lane>, ls:<lane> (see checkout.lua)
  2  counters hash    admitted, used, expired; lined, drawn (waiting-room-join.lua)
  3  draw sizes       string: the Fenwick tree of the pre-queue's bucket sizes (waiting-room-join.lua)
  then four keys for each of the sale's buckets, bucket 0 first (the pre-queue carries each
  user's bucket beside the id: waiting-room-join.lua):
  +1 passes hash      user id -> "<place>:<expiry ms>", or "<place>:used" (checkout.lua writes that)
  +2 live zset        user ids of passes neither used nor counted expired, scored by expiry (ms)
  +3 pre-queue zset   the bucket's range of the draw (see waiting-room-join.lua): places 1..drawn are
                      bucket 0's members in order, then bucket 1's...
  +4 line zset        the bucket's joiners after the pre-queue, scored by rank: place drawn + r
                      is the member of rank r, in whichever bucket holds it (waiting-room-join.lua)
ARGV
  1  the most places this call admits
  2  the bucket count the Worker split by: when it is not the sale's (meta `buckets`, 1 when
     absent), nothing is done and the reply's state is "buckets-changed"
  3  the line: "" (or absent) the public line, else the lane whose line the KEYS are
Reply
  { "waiting-room-progress/2", nowMs, admitted, joined, remaining, used, expired, startsMs, endsMs,
    qrate, state, drawn, letIn }
  state  active | paused | cancelled, or "missing" (all numbers 0) when Redis does not hold the
         sale (or the line's lane), or "buckets-changed" (all numbers 0, nothing done) when ARGV 2 or the bucket KEYS
         are not the sale's count
  drawn  a random sale's pre-queue joiners (places 1..drawn)
  letIn  the buyers this call admitted (passes it gave; quiet places lapse uncounted): the funnel's "admitted"
Time comes from the Redis server (TIME).
]]

local meta, counters, drawSizes = KEYS[1], KEYS[2], KEYS[3]
local maxAdmit, splitBy, lineLane = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] or ''
local SALE_KEYS, PER_BUCKET = 3, 4
local buckets = (#KEYS - SALE_KEYS) / PER_BUCKET
-- Bucket b's (0-based) passes hash, live zset, pre-queue range and line.
local function passesOf(b) return KEYS[SALE_KEYS + PER_BUCKET * b + 1] end
local function liveOf(b) return KEYS[SALE_KEYS + PER_BUCKET * b + 2] end
local function preOf(b) return KEYS[SALE_KEYS + PER_BUCKET * b + 3] end
local function lineOf(b) return KEYS[SALE_KEYS + PER_BUCKET * b + 4] end
local time = redis.call('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local sale = redis.call('HMGET', meta, 'qmode', 'qrate', 'qttl', 'starts', 'ends', 'state', 'remaining', 'buckets', 'lanes')
-- A lane's line: the sale's lanes in order (names, starts) and the line's rank among them.
local laneNames, laneStarts, lineRank = {}, {}, nil
for name, from in string.gmatch(lineLane ~= '' and sale[9] or '', '([^,=]+)=(%d+)') do
  laneNames[#laneNames + 1], laneStarts[#laneStarts + 1] = name, tonumber(from)
  if name == lineLane then
    lineRank = #laneNames
  end
end
if not sale[4] or (lineLane ~= '' and not lineRank) then
  return { 'waiting-room-progress/2', nowMs, 0, 0, 0, 0, 0, 0, 0, 0, 'missing', 0, 0 }
end
if (tonumber(sale[8]) or 1) ~= splitBy or buckets ~= splitBy then
  return { 'waiting-room-progress/2', nowMs, 0, 0, 0, 0, 0, 0, 0, 0, 'buckets-changed', 0, 0 }
end
local mode, rate, ttl = sale[1] or 'off', tonumber(sale[2]) or 1, tonumber(sale[3]) or 0
local starts, ends, state, remaining = tonumber(sale[4]), tonumber(sale[5]), sale[6], tonumber(sale[7])
if lineRank then
  -- The lane's window, and no more passes alive than the lane may still sell.
  starts, ends = laneStarts[lineRank], laneStarts[lineRank + 1] or starts
  local allotted, sold, capped = 0, 0, false
  for j = lineRank, 1, -1 do
    local counts = redis.call('HMGET', meta, 'la:' .. laneNames[j], 'ls:' .. laneNames[j])
    if not counts[1] then
      break
    end
    capped, allotted, sold = true, allotted + tonumber(counts[1]), sold + (tonumber(counts[2]) or 0)
  end
  if capped then
    remaining = math.min(remaining, math.max(0, allotted - sold))
  end
end
local count = redis.call('HMGET', counters, 'admitted', 'used', 'expired', 'lined', 'drawn')
local admitted, used, expired = tonumber(count[1]) or 0, tonumber(count[2]) or 0, tonumber(count[3]) or 0
local lined = tonumber(count[4]) or 0
local preSizes, drawn = {}, 0
for b = 0, buckets - 1 do
  preSizes[b] = redis.call('ZCARD', preOf(b))
  drawn = drawn + preSizes[b]
end
local joined = drawn + lined

-- The join's running totals, written afresh when they are missing or wrong: the Fenwick tree's
-- field i holds the sizes of buckets i - lowest bit of i + 1 .. i (1-based), big-endian u32.
if tonumber(count[5]) ~= drawn then
  local tree = {}
  for i = 1, buckets do
    tree[i] = (tree[i] or 0) + preSizes[i - 1]
    local bit = 1
    while i % (bit * 2) == 0 do
      bit = bit * 2
    end
    if i + bit <= buckets then
      tree[i + bit] = (tree[i + bit] or 0) + tree[i]
    end
  end
  local bytes = { string.char(0, 0, 0, 0) } -- field #0, unused
  for i = 1, buckets do
    local v = tree[i]
    bytes[i + 1] = string.char(math.floor(v / 16777216) % 256, math.floor(v / 65536) % 256, math.floor(v / 256) % 256, v % 256)
  end
  redis.call('SET', drawSizes, table.concat(bytes))
  redis.call('HSET', counters, 'drawn', drawn)
end

-- Passes whose time ran out free their claim on a unit.
local lapsed = 0
for b = 0, buckets - 1 do
  local live = liveOf(b)
  local n = redis.call('ZCOUNT', live, '-inf', nowMs)
  if n > 0 then
    redis.call('ZREMRANGEBYSCORE', live, '-inf', nowMs)
    lapsed = lapsed + n
  end
end
if lapsed > 0 then
  expired = expired + lapsed
  redis.call('HSET', counters, 'expired', expired)
end

local letIn = 0
if mode ~= 'off' and state == 'active' and nowMs >= starts and nowMs < ends then
  local paced = math.floor((nowMs - starts) * rate / 1000) + rate
  local target = math.min(joined, paced, used + expired + remaining, admitted + maxAdmit)
  if target > admitted then
    local entries = {} -- { place, bucket, user id }: the places admitted + 1 .. target
    -- Places 1..drawn are the pre-queue in draw order; the line follows.
    if admitted < drawn then
      -- Ranks admitted .. last (0-based) of the draw, bucket after bucket.
      local last, offset = math.min(target, drawn) - 1, 0
      for b = 0, buckets - 1 do
        local from, to = math.max(admitted, offset), math.min(last, offset + preSizes[b] - 1)
        if from <= to then
          for rank, member in ipairs(redis.call('ZRANGE', preOf(b), from - offset, to - offset)) do
            local bucket, user = string.match(member, '^%x+:(%d+):(.*)$')
            if bucket then -- not a quiet member ("<draw key>:q:<user id>")
              entries[#entries + 1] = { from + rank, tonumber(bucket), user }
            end
          end
        end
        offset = offset + preSizes[b]
      end
    end
    if target > drawn then
      -- Ranks after max(admitted, drawn) - drawn up to target - drawn, wherever their buckets.
      local after = math.max(admitted, drawn) - drawn
      for b = 0, buckets - 1 do
        local found = redis.call('ZRANGEBYSCORE', lineOf(b), '(' .. after, target - drawn, 'WITHSCORES')
        for i = 1, #found, 2 do
          if string.byte(found[i]) ~= 1 then -- not a quiet member ("\1<user id>")
            entries[#entries + 1] = { drawn + tonumber(found[i + 1]), b, found[i] }
          end
        end
      end
    end
    local expires = nowMs + ttl * 1000
    for _, entry in ipairs(entries) do
      local place, b, user = entry[1], entry[2], entry[3]
      redis.call('HSET', passesOf(b), user, place .. ':' .. expires)
      redis.call('ZADD', liveOf(b), expires, user)
    end
    letIn = #entries
    -- The quiet places among them: nobody's pass, lapsed at once.
    expired = expired + (target - admitted) - #entries
    admitted = target
    redis.call('HSET', counters, 'admitted', admitted, 'expired', expired)
  end
end

return { 'waiting-room-progress/2', nowMs, admitted, joined, remaining, used, expired, starts, ends, rate, state, drawn, letIn }
