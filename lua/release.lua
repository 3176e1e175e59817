--[[
release.lua: undo one reservation whose order can never settle (dead-lettered).
Idempotent: a second call for the same order changes nothing.

KEYS
  1  sale meta hash   2  buyers hash   3  outbox zset (see checkout.lua)
ARGV
  1  order id   2  user id
Replies
  1  the unit went back to stock and the user may buy again
  0  nothing to undo (already released, or the user holds another order)
]]

local meta, buyers, outbox = KEYS[1], KEYS[2], KEYS[3]
local orderId, user = ARGV[1], ARGV[2]

redis.call('ZREM', outbox, orderId .. ':' .. user)
if redis.call('HGET', buyers, user) ~= orderId then
  return 0
end
redis.call('HDEL', buyers, user)
redis.call('HINCRBY', meta, 'remaining', 1)
return 1
