#!lua flags=allow-key-locking
--[[
restore.lua: rebuild a sale's live state from D1's records after Redis lost it, a part per
call, under the restore's fenced lock (src/settlement/restore.ts).

Every call first checks that the lock's fencing counter still holds this restore's token
(another restore that took the lock since has a higher one) and that the sale's meta hash is
still absent: the meta is written last, so checkout keeps refusing the sale until every
other part is in place.

KEYS (all share the sale's hash tag: the lock is named sale:<id>)
  1  the lock's fencing counter   2  meta hash   3  buyers hash   4  returned set
  5  outbox zset   6  pending hash   7  checkout keys hash   8  admission hash
ARGV
  1  fencing token   2  part, then by part:
     clear     nothing: drops what an interrupted restore left (2..8 but the meta)
     buyers    user id, "<units>:<latest order id>" pairs
     returned  order ids whose units are back (ended orders: a later return is a no-op)
     meta      3  the latest second an order id minted before the loss can carry; then the
               meta hash's field, value pairs (see checkout.lua)
Replies
  clear  the Redis time, seconds (what `meta` must be later than)
  other  1
Errors: STALE_FENCE (the lock moved on), LOADED (the sale is in Redis again), TOO_SOON
(Redis' clock has not passed that second yet: ids minted now could equal one minted before
the loss; try again in a second)
]]

local fence, meta, buyers, returned = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, part = ARGV[1], ARGV[2]

if redis.call('GET', fence) ~= token then
  return redis.error_reply('STALE_FENCE')
end
if redis.call('EXISTS', meta) == 1 then
  return redis.error_reply('LOADED')
end

if part == 'clear' then
  redis.call('DEL', buyers, returned, KEYS[5], KEYS[6], KEYS[7], KEYS[8])
  return tonumber(redis.call('TIME')[1])
end
if part == 'buyers' then
  redis.call('HSET', buyers, unpack(ARGV, 3))
  return 1
end
if part == 'returned' then
  redis.call('SADD', returned, unpack(ARGV, 3))
  return 1
end
if part == 'meta' then
  if tonumber(redis.call('TIME')[1]) <= tonumber(ARGV[3]) then
    return redis.error_reply('TOO_SOON')
  end
  redis.call('HSET', meta, unpack(ARGV, 4))
  return 1
end
return redis.error_reply('restore.lua: part must be clear, buyers, returned or meta')
