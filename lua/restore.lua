#!lua flags=allow-key-locking
--[[
restore.lua: rebuild a sale's live state from D1's records after Redis lost it, a part per
call, under the restore's fenced lock (src/settlement/restore.ts).

Every call first checks that the lock's fencing counter still holds this restore's token
(another restore that took the lock since has a higher one) and that the sale's meta hash is
still absent: the meta is written last, so checkout keeps refusing the sale until every
other part is in place.

KEYS (all share the sale's hash tag: the lock is named sale:<id>; docs/architecture.md,
"The sale's Redis layout")
  1  the lock's fencing counter   2  meta hash   then by part:
     clear     3..  keys to drop: the admission hash, the access codes' hashes and the per-buyer
               keys of some of the sale's buckets (buyers, returned, outbox, pending, checkout
               keys); a sale of many buckets is cleared in several calls
     hash      3    a hash to fill: one bucket's buyers, or one shard of access codes or their batches' counters
     returned  3    one bucket's returned set
ARGV
  1  fencing token   2  part, then by part:
     clear     nothing: drops what an interrupted restore left
     hash      field, value pairs: user id, "<units>:<latest order id>" of the bucket's buyers;
               code hash, code record (see checkout.lua) of the shard's codes; or the batches' counters
     returned  order ids whose units are back (ended orders of KEYS[3]'s bucket's buyers: a
               later return is a no-op)
     meta      3  the latest second an order id minted before the loss can carry; then the
               meta hash's field, value pairs (see checkout.lua), its bucket count included
Replies
  clear  the Redis time, seconds (what `meta` must be later than)
  other  1
Errors: STALE_FENCE (the lock moved on), LOADED (the sale is in Redis again), TOO_SOON
(Redis' clock has not passed that second yet: ids minted now could equal one minted before
the loss; try again in a second)
]]

local fence, meta = KEYS[1], KEYS[2]
local token, part = ARGV[1], ARGV[2]

if redis.call('GET', fence) ~= token then
  return redis.error_reply('STALE_FENCE')
end
if redis.call('EXISTS', meta) == 1 then
  return redis.error_reply('LOADED')
end

if part == 'clear' then
  if #KEYS > 2 then
    redis.call('DEL', unpack(KEYS, 3))
  end
  return tonumber(redis.call('TIME')[1])
end
if part == 'hash' then
  redis.call('HSET', KEYS[3], unpack(ARGV, 3))
  return 1
end
if part == 'returned' then
  redis.call('SADD', KEYS[3], unpack(ARGV, 3))
  return 1
end
if part == 'meta' then
  if tonumber(redis.call('TIME')[1]) <= tonumber(ARGV[3]) then
    return redis.error_reply('TOO_SOON')
  end
  redis.call('HSET', meta, unpack(ARGV, 4))
  return 1
end
return redis.error_reply('restore.lua: part must be clear, hash, returned or meta')
