#!lua flags=allow-key-locking
--[[
lab-cas.lua: the lab's optimistic write, a compare-and-set on a version (optimistic concurrency).
Sets the remaining stock only if nobody wrote since the caller read it.

The version is the lab sale's `seq` field: it grows by one per successful write, so it
also counts accepted checkouts exactly and numbers the lab's orders.

KEYS
  1  lab sale meta hash  fields: remaining, seq (laid out by createLabSale, src/lab/sale.ts)
ARGV
  1  the version (seq) the caller read
  2  the remaining stock the caller computed from what it read
Replies
  n > 0  written; n is the new version (the order number)
  0      another checkout wrote first; the caller reads again and retries
]]

local meta = KEYS[1]
if redis.call('HGET', meta, 'seq') ~= ARGV[1] then
  return 0
end
redis.call('HSET', meta, 'remaining', ARGV[2])
return redis.call('HINCRBY', meta, 'seq', 1)
