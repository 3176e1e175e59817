#!lua flags=allow-key-locking
--[[
lab-design-card.lua: the lab's design-card checkout, a flash sale as its design is usually
drawn: one script per buyer, sent whole (EVAL) every time, after a rate-limit call of its own.
Checks the buyer and the stock and takes a unit, atomically.

KEYS
  1  lab sale meta hash  fields: remaining, seq (laid out by createLabSale, src/lab/sale.ts)
  2  lab sale buyers hash  user id -> 1
ARGV
  1  the user id
Replies
  n > 0  accepted; n is the order number (the meta's seq)
  0      sold out
  -1     the user bought already
  -2     no such lab sale
]]

local meta, buyers = KEYS[1], KEYS[2]
local remaining = tonumber(redis.call('HGET', meta, 'remaining'))
if remaining == nil then
  return -2
end
if redis.call('HEXISTS', buyers, ARGV[1]) == 1 then
  return -1
end
if remaining <= 0 then
  return 0
end
redis.call('HSET', meta, 'remaining', remaining - 1)
redis.call('HSET', buyers, ARGV[1], 1)
return redis.call('HINCRBY', meta, 'seq', 1)
