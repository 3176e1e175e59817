#!lua flags=allow-key-locking
--[[
draw-enter.lua: enter a sale's draw, change the entry, or withdraw it, in one step.

An entrant holds one entry per sale: entering again changes its variant and quantity (the
receipt and the time of entry stay), withdrawing keeps its receipt for a later entry. The
entries window is Redis' clock against the meta hash's qopens (opening) and dcloses (close);
once the draw's run has sealed the sale's entries (lua/draw-seal.lua) nothing changes them
whatever the clocks say. One account, one seat: beyond `seats` user ids from one client
address (or when the Worker says so: a deny rule, a failed human check), an entry is taken
quietly (state q): it is answered like any other but never counted, never committed to the
draw, and never wins.

A sale with presale lanes (meta `lanes`, docs/lanes.md) draws each lane apart: a first entry
that names an access code (ARGV 10, its hash) enters the code's lane, whose winners the draw
picks from the lane's own allotment and are offered their units from the lane's start. The code
is read as lua/checkout.lua reads it (known, not revoked or expired, of one of the sale's lanes,
bound to no other account, a use left), bound to the entrant, and no use is spent: the offer's
checkout spends it with the unit. A first entry without a code enters the public draw; a change
keeps the entry's lane and code.

KEYS (all share the sale's hash tag)
  1  sale meta hash   qmode (draw), qopens, dcloses (epoch ms), state, limit, variants, buckets
  2  draw hash        standing (entries counted), e:<variant> (entries), u:<variant> (units asked), sealed
  3  entries hash     the entrant's bucket: user id -> "<variant>|<quantity>|<entered at ms>|<receipt hex>|<state>",
                      state e (entered), q (entered quietly) or w (withdrawn); a lane's entry adds
                      "|<lane>|<code hash>"
  4  seats zset       user ids one client address brought to the sale (lua/address-seat.lua's)
  then, when ARGV 10 names a code:
  5  code batches     "<batch id>:revoked" -> 1, "<batch id>:bound" -> count
  6  code shard       code hash -> "<batch id>|<lane>|<uses left>|<expiry ms, 0: none>|<bound user id, or empty>"
ARGV
  1  enter | withdraw
  2  user id
  3  variant ("default" for a sale without variants)
  4  quantity (1 .. the sale's limit; the Worker checked it)
  5  a fresh receipt (32 hex characters): used only for a first entry
  6  seats: user ids one address may bring (0: no limit)
  7  how long the seats record lasts (s)
  8  the bucket count the Worker split entrants by
  9  "1": a first entry is taken quietly (a deny rule matched, or a human check failed)
  10 the hash of the entrant's access code ("" or absent: none)
Reply: { "draw-enter/2", outcome, variant, quantity, entered at (ms), receipt, state, now (ms), lane }
  outcome  ENTERED (a first entry) | CHANGED (an entry changed or repeated) | WITHDRAWN |
           NOT_ENTERED (withdraw without an entry) | DRAW_NOT_OPEN | DRAW_CLOSED |
           SALE_NOT_FOUND | NOT_A_DRAW | SALE_CANCELLED | VARIANT_NOT_FOUND | BUCKETS_CHANGED |
           ACCESS_CODE_INVALID | ACCESS_CODE_USED (a first entry's code)
  lane     the entry's presale lane ("" for the public draw)
  state    e | q | w, the entry after this call ("" when there is none)
Time comes from the Redis server (TIME), never from the caller.
]]

local meta, draw, entries, seats = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local op, user, variant, quantity, receipt = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5]
local seatLimit, seatTtl, splitBy, quietly = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9] == '1'
local code = ARGV[10] or ''


local time = redis.call('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local function reply(outcome, v, q, at, r, state, lane)
  return { 'draw-enter/2', outcome, v or '', q or 0, at or 0, r or '', state or '', nowMs, lane or '' }
end

local sale = redis.call('HMGET', meta, 'qmode', 'qopens', 'dcloses', 'state', 'variants', 'buckets', 'lanes')
if not sale[1] then
  return reply('SALE_NOT_FOUND')
elseif sale[1] ~= 'draw' then
  return reply('NOT_A_DRAW')
elseif (tonumber(sale[6]) or 1) ~= splitBy then
  return reply('BUCKETS_CHANGED')
elseif sale[4] == 'cancelled' then
  return reply('SALE_CANCELLED')
elseif nowMs < tonumber(sale[2]) then
  return reply('DRAW_NOT_OPEN')
elseif nowMs >= tonumber(sale[3]) or redis.call('HGET', draw, 'sealed') then
  return reply('DRAW_CLOSED')
end

-- The entry as it stands: its fields, or nothing.
local record = redis.call('HGET', entries, user)
local was = {}
if record then
  was.variant, was.quantity, was.at, was.receipt, was.state, was.lane, was.code =
    string.match(record, '^(.-)|(%d+)|(%d+)|(%x+)|(%a)|([a-z0-9-]+)|(%x+)$')
  if not was.variant then
    was.variant, was.quantity, was.at, was.receipt, was.state = string.match(record, '^(.*)|(%d+)|(%d+)|(%x+)|(%a)$')
  end
  was.quantity = tonumber(was.quantity)
end
-- The record's lane part: "|<lane>|<code hash>" for a lane's entry, nothing for a public one.
local function lanePart(lane, hash)
  return lane and ('|' .. lane .. '|' .. hash) or ''
end
local counted = was.state == 'e'

-- Takes the entry's units out of (sign -1) or into (sign 1) the counters.
local function count(v, q, sign)
  redis.call('HINCRBY', draw, 'standing', sign)
  redis.call('HINCRBY', draw, 'e:' .. v, sign)
  redis.call('HINCRBY', draw, 'u:' .. v, sign * q)
end

if op == 'withdraw' then
  if not record or was.state == 'w' then
    return reply('NOT_ENTERED')
  end
  if counted then
    count(was.variant, was.quantity, -1)
  end
  redis.call('HSET', entries, user, was.variant .. '|' .. was.quantity .. '|' .. was.at .. '|' .. was.receipt .. '|w'
    .. lanePart(was.lane, was.code))
  return reply('WITHDRAWN', was.variant, was.quantity, was.at, was.receipt, 'w', was.lane)
end

-- The variant must be one the sale sells: one of `variants`, or "default" for a sale without.
if sale[5] then
  if not string.find(',' .. sale[5], ',' .. variant .. '=', 1, true) then
    return reply('VARIANT_NOT_FOUND')
  end
elseif variant ~= 'default' then
  return reply('VARIANT_NOT_FOUND')
end

local state = was.state
local outcome = 'CHANGED'
local lane, laneCode = was.lane, was.code
if not record or was.state == 'w' then
  outcome = 'ENTERED'
  lane, laneCode = nil, nil
  if code ~= '' then
    -- A lane's entry: its code, read as lua/checkout.lua reads it, then bound to the entrant.
    local codeBatches, shard = KEYS[5], KEYS[6]
    local codeRecord = redis.call('HGET', shard, code)
    local batch, codeLane, uses, expiry, bound = string.match(codeRecord or '', '^([^|]+)|([^|]+)|(%d+)|(%d+)|(.*)$')
    if not batch or redis.call('HEXISTS', codeBatches, batch .. ':revoked') == 1
      or (tonumber(expiry) > 0 and tonumber(expiry) <= nowMs) or (bound ~= '' and bound ~= user)
      or not string.find(',' .. (sale[7] or ''), ',' .. codeLane .. '=', 1, true) then
      return reply('ACCESS_CODE_INVALID')
    elseif tonumber(uses) <= 0 then
      return reply('ACCESS_CODE_USED')
    elseif bound == '' then
      redis.call('HSET', shard, code, table.concat({ batch, codeLane, uses, expiry, user }, '|'))
      redis.call('HINCRBY', codeBatches, batch .. ':bound', 1)
    end
    lane, laneCode = codeLane, code
  end
  state = quietly and 'q' or 'e'
  -- One account, one seat: this user id's place among those the address brought.
  if seatLimit > 0 then
    local place = redis.call('ZSCORE', seats, user)
    if not place then
      place = redis.call('ZCARD', seats)
      redis.call('ZADD', seats, place, user)
    end
    redis.call('EXPIRE', seats, seatTtl)
    if tonumber(place) >= seatLimit then
      state = 'q'
    end
  end
end
if counted then
  count(was.variant, was.quantity, -1)
end
if state == 'e' then
  count(variant, quantity, 1)
end
local at, kept = was.at or nowMs, was.receipt or receipt
if was.state == 'w' then
  at = nowMs
end
redis.call('HSET', entries, user, variant .. '|' .. quantity .. '|' .. at .. '|' .. kept .. '|' .. state .. lanePart(lane, laneCode))
return reply(outcome, variant, quantity, at, kept, state, lane)
