#!lua flags=allow-key-locking
--[[
sale-sync.lua: bring a sale's meta hash to the record D1 holds at `version`.

Loads the sale when Redis does not have it yet and the record is the sale's first (version
1: just created, nothing sold); a later record for a sale Redis does not hold means Redis
lost its live state, which only a restore from D1 may rebuild (src/settlement/restore.ts).
Otherwise applies the record only if it is newer than the one applied last, so a retried create never resets live counters and two
edits racing each other leave the newer one, whatever order their syncs arrive in. Stock
only grows: the units added go on sale at once (remaining grows by the same amount), and
order ids already minted (seq) are kept.

KEYS
  1  sale meta hash (docs/architecture.md, "The sale's Redis layout")
ARGV
  1  version   2  stock   3  starts (epoch ms)   4  ends (epoch ms)   5  id slot (0..4095)
  6  admission refill rate (tokens/s)   7  admission burst   8  sale name
  9  units one buyer may hold   10  state: active | paused | cancelled
  11 waiting room: off | fifo | random   12 joining opens (epoch ms)   13 places admitted per second
  14 how long a pass is valid (s)   15 buckets: how many buckets the sale's per-buyer records are
  split into (D1 changes it only before anyone can join or buy: src/sales/repository.ts)
Replies
  1  loaded now, or brought up to this version
  0  this version or a newer one was applied before (nothing changed)
  -1 Redis does not hold the sale and this is not its first record (nothing changed)
  error when the record would take stock away
]]

local meta = KEYS[1]
local version, stock = tonumber(ARGV[1]), tonumber(ARGV[2])
local current = redis.call('HMGET', meta, 'version', 'stock')
if current[2] then
  -- Sales loaded before versions existed were at their first.
  if version <= (tonumber(current[1]) or 1) then
    return 0
  end
  local added = stock - tonumber(current[2])
  if added < 0 then
    return redis.error_reply('sale-sync.lua: stock never shrinks')
  end
  redis.call('HINCRBY', meta, 'remaining', added)
elseif version == 1 then
  redis.call('HSET', meta, 'remaining', stock, 'seq', 0)
else
  return -1
end
redis.call('HSET', meta, 'version', version, 'stock', stock, 'starts', ARGV[3], 'ends', ARGV[4], 'slot', ARGV[5],
  'rate', ARGV[6], 'burst', ARGV[7], 'name', ARGV[8], 'limit', ARGV[9], 'state', ARGV[10],
  'qmode', ARGV[11], 'qopens', ARGV[12], 'qrate', ARGV[13], 'qttl', ARGV[14], 'buckets', ARGV[15])
return 1
