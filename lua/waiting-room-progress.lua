#!lua flags=allow-key-locking
--[[
waiting-room-progress.lua: move a sale's waiting room forward to now, and read where it stands.

Each isolate calls it at most about once a second per sale and answers every poll in between
from the reply, so a poll costs no Redis command of its own.

Admission: while the sale is on and admission is not held (meta qpaused), every place up to
`admitted` is let in, where
  admitted = min(joined,
                 paced:  pbase + floor(ms since pat * qrate / 1000) + qrate (a second's worth at once),
                 units:  admitted + remaining - fresh)
`fresh` counts the passes given less than a grace (ARGV 3) ago and neither used nor expired:
the units bound keeps them no more numerous than the units left (remaining already excludes
the units of orders awaiting payment), so the units offered follow the stock. A pass still
unused a grace after it was given is counted a no-show (counter `noshow`): it holds no unit
back any more, and the next place is let in in its place. Its holder may still buy until the
pass expires, if a unit is left then: lua/checkout.lua's deduct decides, so nothing is sold
twice. A pass used takes its unit with it (remaining and fresh both fall by one); an order
cancelled or expired gives its units back to `remaining`, which lets the next place in.
qrate is a ceiling: the pace restarts from the current place (pat, pbase) when the rate
changes or admission resumes after a hold, so neither lets a backlog in at once; the first
pace counts from the start, or from the line's opening (qopens) when a sale already selling
was put behind the waiting room. An admitted place gets a pass record valid qttl seconds. A
call admits at most ARGV[1] places; the next call goes on. A quiet joiner's place
(waiting-room-join.lua: a line member "\1<user id>", a pre-queue member "<draw key>:q<bucket>:<user id>")
is let in as nobody's: its pass record is a person's marked quiet ("<place>:<expiry ms>:q"), so
its holder's poll answers it admitted as a person's, but it is not live and is counted expired
at once, so it holds no unit back, and lua/checkout.lua answers it as sold out.

A presale lane's own line (ARGV 3; docs/lanes.md, "Lanes with a waiting room") moves the same
way over its own keys (its own counters, passes, no-shows, pace and snapshots), from the lane's
start until the next lane's start or the public start (its startsMs and endsMs in the reply), and
its units bound is what the lane may still sell: its allotment and those of the capped lanes
right before it, less what they sold (as lua/checkout.lua counts it), never more than the sale's
remaining. Only one line sells at a time (checkout.lua takes a lane's passes in its window only,
the public line's from the public start), so each line's bound holds on its own.

It measures the line as it goes, for the polls' estimates: two snapshots of (time, admitted,
units given back: meta `rtn`, counted by return.lua), the older between half a window and a
window (ARGV 5) old, taken afresh whenever the pace restarts; the reply gives what happened
since the older one.

It also keeps waiting-room-join.lua's running totals true (counters `drawn` and the Fenwick tree
of the pre-queue's bucket sizes): it reads every bucket's size anyway, and when `drawn` is
missing (a sale stored before the totals were kept, or none joined its pre-queue yet) or is
not their sum (a join by a Worker that did not keep them), it writes them afresh.

KEYS (all share the sale's hash tag; docs/architecture.md, "The sale's Redis layout"); all but 1 are the line's
  1  sale meta hash   qmode, qrate, qttl, qopens, qpaused, notice, starts, ends, state, remaining, stock,
                      limit, rtn, buckets, lanes, la:<lane>, ls:<lane> (see checkout.lua, sale-sync.lua)
  2  counters hash    admitted, used, expired; lined, drawn (waiting-room-join.lua); noshow, nscut (the
                      expiry up to which passes were counted no-shows); prate, pat, pbase, pstop (the
                      pace: its rate, since when, from which place; held since); m1t, m1a, m1r, m2t,
                      m2a, m2r (the two snapshots)
  3  draw sizes       string: the Fenwick tree of the pre-queue's bucket sizes (waiting-room-join.lua)
  then four keys for each of the sale's buckets, bucket 0 first (the pre-queue carries each
  user's bucket beside the id: waiting-room-join.lua):
  +1 passes hash      user id -> "<place>:<expiry ms>", or "<place>:used" (checkout.lua writes that);
                      a quiet place's "<place>:<expiry ms>:q"
  +2 live zset        user ids of passes neither used nor counted expired, scored by expiry (ms)
                      (never a quiet place's)
  +3 pre-queue zset   the bucket's range of the draw (see waiting-room-join.lua): places 1..drawn are
                      bucket 0's members in order, then bucket 1's...
  +4 line zset        the bucket's joiners after the pre-queue, scored by rank: place drawn + r
                      is the member of rank r, in whichever bucket holds it (waiting-room-join.lua)
ARGV
  1  the most places this call admits
  2  the bucket count the Worker split by: when it is not the sale's (meta `buckets`, 1 when
     absent), nothing is done and the reply's state is "buckets-changed"
  3  the line: "" the public line, else the lane whose line the KEYS are
  4  the no-show grace (ms)   5  the measuring window (ms)
Reply
  { "waiting-room-progress/3", nowMs, admitted, joined, remaining, used, expired, startsMs, endsMs,
    qrate, state, drawn, fresh, noshow, windowMs, windowAdmitted, windowReturned, taken, limit, notice,
    nextNoShowAt, holdMs, letIn }
  state  active | paused (the sale, or admission held) | cancelled, or "missing" (all numbers 0)
         when Redis does not hold the sale (or the line's lane), or "buckets-changed" (all numbers
         0, nothing done) when ARGV 2 or the bucket KEYS are not the sale's count
  remaining  the units the line may still offer (a lane's line: what its lane may still sell)
  drawn  a random sale's pre-queue joiners (places 1..drawn)
  fresh  passes alive that were given less than a grace ago   noshow  passes counted no-shows so far
  windowMs, windowAdmitted, windowReturned  since the older snapshot (all 0 before the first)
  taken  units checkouts have taken from the sale, those given back since included (stock - remaining + rtn)
  limit  units one buyer may hold   notice  the operator's notice ("" for none)
  nextNoShowAt  when the oldest fresh pass stops holding its unit if it is not used (0: no fresh pass)
  holdMs        how long a pass holds its unit unused: the grace, or qttl when that is shorter
  letIn         the buyers this call admitted (passes it gave; quiet places, lapsed at once, uncounted): the funnel's "admitted"
Time comes from the Redis server (TIME).
]]

local meta, counters, drawSizes = KEYS[1], KEYS[2], KEYS[3]
local maxAdmit, splitBy, lineLane = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local grace, window = tonumber(ARGV[4]), tonumber(ARGV[5])
local SALE_KEYS, PER_BUCKET = 3, 4
local buckets = (#KEYS - SALE_KEYS) / PER_BUCKET
-- Bucket b's (0-based) passes hash, live zset, pre-queue range and line.
local function passesOf(b) return KEYS[SALE_KEYS + PER_BUCKET * b + 1] end
local function liveOf(b) return KEYS[SALE_KEYS + PER_BUCKET * b + 2] end
local function preOf(b) return KEYS[SALE_KEYS + PER_BUCKET * b + 3] end
local function lineOf(b) return KEYS[SALE_KEYS + PER_BUCKET * b + 4] end
local time = redis.call('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local function nothing(state)
  return { 'waiting-room-progress/3', nowMs, 0, 0, 0, 0, 0, 0, 0, 0, state, 0, 0, 0, 0, 0, 0, 0, 0, '', 0, 0, 0 }
end
local sale = redis.call('HMGET', meta, 'qmode', 'qrate', 'qttl', 'starts', 'ends', 'state', 'remaining', 'buckets',
  'qpaused', 'qopens', 'notice', 'stock', 'limit', 'rtn', 'lanes')
-- A lane's line: the sale's lanes in order (names, starts) and the line's rank among them.
local laneNames, laneStarts, lineRank = {}, {}, nil
for name, from in string.gmatch(lineLane ~= '' and sale[15] or '', '([^,=]+)=(%d+)') do
  laneNames[#laneNames + 1], laneStarts[#laneStarts + 1] = name, tonumber(from)
  if name == lineLane then
    lineRank = #laneNames
  end
end
if not sale[4] or (lineLane ~= '' and not lineRank) then
  return nothing('missing')
end
if (tonumber(sale[8]) or 1) ~= splitBy or buckets ~= splitBy then
  return nothing('buckets-changed')
end
local mode, rate, ttlMs = sale[1] or 'off', tonumber(sale[2]) or 1, (tonumber(sale[3]) or 0) * 1000
local starts, ends, state, remaining = tonumber(sale[4]), tonumber(sale[5]), sale[6], tonumber(sale[7])
local held, opens, returnedUnits = sale[9] == '1', tonumber(sale[10]) or 0, tonumber(sale[14]) or 0
local saleRemaining = remaining
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
local count = redis.call('HMGET', counters, 'admitted', 'used', 'expired', 'lined', 'drawn', 'noshow', 'nscut',
  'prate', 'pat', 'pbase', 'pstop', 'm1t', 'm1a', 'm1r', 'm2t', 'm2a', 'm2r')
local admitted, used, expired = tonumber(count[1]) or 0, tonumber(count[2]) or 0, tonumber(count[3]) or 0
local lined, noshow = tonumber(count[4]) or 0, tonumber(count[6]) or 0
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

-- No-shows: passes alive whose expiry is at most freshFrom were given a grace ago or more.
-- Those not counted yet (expiry above nscut) are counted now, before any lapses below.
local shortPass = grace >= ttlMs -- a pass expires before its grace is over: its lapse is the no-show
local freshFrom = nowMs - grace + ttlMs
if not shortPass and (not count[7] or freshFrom > tonumber(count[7])) then
  local newly = 0
  for b = 0, buckets - 1 do
    newly = newly + redis.call('ZCOUNT', liveOf(b), count[7] and '(' .. count[7] or '-inf', freshFrom)
  end
  noshow = noshow + newly
  redis.call('HSET', counters, 'noshow', noshow, 'nscut', freshFrom)
end

-- Passes whose time ran out free their claim on a unit. `oldest`: the expiry of the oldest
-- pass still fresh, whose grace (or, for a short pass, time) ends first.
local lapsed, fresh, oldest = 0, 0, nil
local freshLow = shortPass and '-inf' or '(' .. freshFrom
for b = 0, buckets - 1 do
  local live = liveOf(b)
  local n = redis.call('ZCOUNT', live, '-inf', nowMs)
  if n > 0 then
    redis.call('ZREMRANGEBYSCORE', live, '-inf', nowMs)
    lapsed = lapsed + n
  end
  fresh = fresh + redis.call('ZCOUNT', live, freshLow, '+inf')
  local first = redis.call('ZRANGEBYSCORE', live, freshLow, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if first[2] and (not oldest or tonumber(first[2]) < oldest) then
    oldest = tonumber(first[2])
  end
end
if lapsed > 0 then
  expired = expired + lapsed
  if shortPass then
    noshow = noshow + lapsed
  end
  redis.call('HSET', counters, 'expired', expired, 'noshow', noshow)
end

-- The pace, and the snapshots the rates are measured from: restarted at the current place when
-- the rate changed or admission resumed, so neither lets a backlog in at once.
local running = mode ~= 'off' and state == 'active' and not held and nowMs >= starts and nowMs < ends
local paceRate, paceAt, paceBase = tonumber(count[8]), tonumber(count[9]), tonumber(count[10])
local m1t, m1a, m1r = tonumber(count[12]), tonumber(count[13]), tonumber(count[14])
local m2t, m2a, m2r = tonumber(count[15]), tonumber(count[16]), tonumber(count[17])
local function restartPace(at, base)
  paceRate, paceAt, paceBase = rate, at, base
  m1t, m1a, m1r, m2t, m2a, m2r = at, base, returnedUnits, at, base, returnedUnits
  redis.call('HSET', counters, 'prate', rate, 'pat', at, 'pbase', base, 'pstop', 0,
    'm1t', at, 'm1a', base, 'm1r', returnedUnits, 'm2t', at, 'm2a', base, 'm2r', returnedUnits)
end
if running and not paceRate then
  -- qopens is the public line's opening: a lane's line counts from its own start.
  restartPace(lineRank and starts or math.max(starts, opens), 0)
elseif running and (paceRate ~= rate or count[11] == '1') then
  restartPace(nowMs, admitted)
elseif not running and paceRate and count[11] ~= '1' and mode ~= 'off' and nowMs >= starts and nowMs < ends then
  redis.call('HSET', counters, 'pstop', 1) -- held or paused: the pace restarts on resuming
end

local letIn = 0
if running then
  local paced = paceBase + math.floor((nowMs - paceAt) * rate / 1000) + rate
  local target = math.min(joined, paced, admitted + remaining - fresh, admitted + maxAdmit)
  if target > admitted then
    local entries = {} -- { place, bucket, user id, quiet }: the places admitted + 1 .. target
    -- Places 1..drawn are the pre-queue in draw order; the line follows.
    if admitted < drawn then
      -- Ranks admitted .. last (0-based) of the draw, bucket after bucket.
      local last, offset = math.min(target, drawn) - 1, 0
      for b = 0, buckets - 1 do
        local from, to = math.max(admitted, offset), math.min(last, offset + preSizes[b] - 1)
        if from <= to then
          for rank, member in ipairs(redis.call('ZRANGE', preOf(b), from - offset, to - offset)) do
            -- A quiet member is "<draw key>:q<bucket>:<user id>"; one joined before members carried
            -- their bucket ("<draw key>:q:<user id>") lapses with no pass record.
            local quiet, bucket, user = string.match(member, '^%x+:(q?)(%d+):(.*)$')
            if bucket then
              entries[#entries + 1] = { from + rank, tonumber(bucket), user, quiet == 'q' }
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
          local quiet = string.byte(found[i]) == 1 -- a quiet member: "\1<user id>"
          entries[#entries + 1] = { drawn + tonumber(found[i + 1]), b, quiet and string.sub(found[i], 2) or found[i], quiet }
        end
      end
    end
    local expires = nowMs + ttlMs
    for _, entry in ipairs(entries) do
      local place, b, user, quiet = entry[1], entry[2], entry[3], entry[4]
      if quiet then
        -- Nobody's: a pass record as a person's, marked, never live, lapsed at once.
        redis.call('HSET', passesOf(b), user, place .. ':' .. expires .. ':q')
      else
        redis.call('HSET', passesOf(b), user, place .. ':' .. expires)
        redis.call('ZADD', liveOf(b), expires, user)
        letIn = letIn + 1
      end
    end
    expired = expired + (target - admitted) - letIn
    fresh = fresh + letIn
    if letIn > 0 and not oldest then
      oldest = expires
    end
    admitted = target
    redis.call('HSET', counters, 'admitted', admitted, 'expired', expired)
  end
  -- The newer snapshot becomes the older once it is half a window old.
  if m2t and nowMs - m2t >= window / 2 then
    m1t, m1a, m1r = m2t, m2a, m2r
    redis.call('HSET', counters, 'm1t', m1t, 'm1a', m1a, 'm1r', m1r, 'm2t', nowMs, 'm2a', admitted, 'm2r', returnedUnits)
  end
end

local measured = m1t ~= nil and nowMs > m1t
local stock, limit = tonumber(sale[12]) or 0, tonumber(sale[13]) or 1
local graceOf = shortPass and ttlMs or grace -- how long a pass holds its unit unused
return { 'waiting-room-progress/3', nowMs, admitted, joined, remaining, used, expired, starts, ends, rate,
  (state == 'active' and held) and 'paused' or state, drawn, fresh, noshow,
  measured and nowMs - m1t or 0, measured and admitted - m1a or 0, measured and math.max(0, returnedUnits - m1r) or 0,
  stock - saleRemaining + returnedUnits, limit, sale[11] or '', oldest and oldest - ttlMs + graceOf or 0, graceOf,
  letIn }
