#!lua flags=allow-key-locking
--[[
sale-sync.lua: bring a sale's meta hash to the record D1 holds at `version`.

Loads the sale when Redis does not have it yet and the record is the sale's first (version
1: just created, nothing sold); a later record for a sale Redis does not hold means Redis
lost its live state, which only a restore from D1 may rebuild (src/settlement/restore.ts).
Otherwise applies the record only if it is newer than the one applied last, so a retried create never resets live counters and two
edits racing each other leave the newer one, whatever order their syncs arrive in. Stock
only grows: the units added go on sale at once (remaining grows by the same amount), and
order ids already minted (seq) are kept. A sale with variants does the same per variant: a
variant's units added (or a new variant's) go on sale in its own counter `v:<id>` and in the
total `remaining`; `variants` lists each variant's stock, "<id>=<stock>,..." in the admin's
order (lua/checkout.lua takes its presence to mean the sale has variants). A sale's presale
lanes are `lanes` ("<lane>=<start ms>,..." in start order; absent for none) and each
allotment a field of its own, `la:<lane>` and `la:<lane>:<variant>`, listed in `lallot` so
that an edit that drops one removes it; the units each lane sold (`ls:...`) stay. An operator's
hold on admission from the waiting room is `qpaused` and the notice the waiting room shows `notice`.

KEYS
  1  sale meta hash (docs/architecture.md, "The sale's Redis layout")
ARGV
  1  version   2  stock   3  starts (epoch ms)   4  ends (epoch ms)   5  id slot (0..4095)
  6  admission refill rate (tokens/s)   7  admission burst   8  sale name
  9  units one buyer may hold   10  state: active | paused | cancelled
  11 waiting room: off | fifo | random, or draw (a sale sold by draw)   12 joining opens, or a
  draw's entries open (epoch ms)   13 places admitted per second   14 how long a pass is valid (s)
  15 buckets: how many buckets the sale's per-buyer records are split into (D1 changes it only
  before anyone can join or buy: src/sales/repository.ts)   16 a draw's entries close (epoch ms; 0: not a draw)
  17 lanes: "<lane>=<start ms>,..." ("" for none)   18 allotments: "<lane>[:<variant>]=<units>,..." ("" for none)
  19 admission paused: "1" or "0" (absent: "0")   20 the operator's notice ("" or absent: none)
  21.. variant id, stock pairs (none for a sale without variants)
Replies
  1  loaded now, or brought up to this version
  0  this version or a newer one was applied before (nothing changed)
  -1 Redis does not hold the sale and this is not its first record (nothing changed)
  error when the record would take stock away
]]

local meta = KEYS[1]
local version, stock = tonumber(ARGV[1]), tonumber(ARGV[2])
local current = redis.call('HMGET', meta, 'version', 'stock', 'variants', 'lallot')
if current[2] then
  -- Sales loaded before versions existed were at their first.
  if version <= (tonumber(current[1]) or 1) then
    return 0
  end
  if stock < tonumber(current[2]) then
    return redis.error_reply('sale-sync.lua: stock never shrinks')
  end
elseif version ~= 1 then
  return -1
end

-- Each variant's units added since the stock last applied (all of a new one's).
local before = {}
for id, n in string.gmatch(current[3] or '', '([^,=]+)=(%d+)') do
  before[id] = tonumber(n)
end
local listed, added = {}, { 'remaining', stock - (tonumber(current[2]) or 0) }
for i = 21, #ARGV, 2 do
  local id, n = ARGV[i], tonumber(ARGV[i + 1])
  if n < (before[id] or 0) then
    return redis.error_reply('sale-sync.lua: a variant\'s stock never shrinks')
  end
  listed[#listed + 1] = id .. '=' .. n
  added[#added + 1] = 'v:' .. id
  added[#added + 1] = n - (before[id] or 0)
end
for i = 1, #added, 2 do
  redis.call('HINCRBY', meta, added[i], added[i + 1])
end
if not current[2] then
  redis.call('HSET', meta, 'seq', 0)
end
redis.call('HSET', meta, 'version', version, 'stock', stock, 'starts', ARGV[3], 'ends', ARGV[4], 'slot', ARGV[5],
  'rate', ARGV[6], 'burst', ARGV[7], 'name', ARGV[8], 'limit', ARGV[9], 'state', ARGV[10],
  'qmode', ARGV[11], 'qopens', ARGV[12], 'qrate', ARGV[13], 'qttl', ARGV[14], 'buckets', ARGV[15], 'dcloses', ARGV[16],
  'qpaused', ARGV[19] or '0', 'notice', ARGV[20] or '')
if #listed > 0 then
  redis.call('HSET', meta, 'variants', table.concat(listed, ','))
end
-- Lanes and their allotments as the record has them now.
for field in string.gmatch(current[4] or '', '([^,=]+)=%d+') do
  redis.call('HDEL', meta, 'la:' .. field)
end
for field, n in string.gmatch(ARGV[18], '([^,=]+)=(%d+)') do
  redis.call('HSET', meta, 'la:' .. field, n)
end
if ARGV[17] ~= '' then
  redis.call('HSET', meta, 'lanes', ARGV[17], 'lallot', ARGV[18])
else
  redis.call('HDEL', meta, 'lanes', 'lallot')
end
return 1
