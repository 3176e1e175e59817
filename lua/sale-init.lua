#!lua flags=allow-key-locking
--[[
sale-init.lua: load a sale into Redis once; a retry never resets live counters.

KEYS
  1  sale meta hash (see checkout.lua)
ARGV
  1  stock   2  starts (epoch ms)   3  ends (epoch ms)   4  id slot (0..4095)
  5  admission refill rate (tokens/s)   6  admission burst   7  sale name
  8  units one buyer may hold
Replies
  1  the sale was loaded now
  0  it was already there (left untouched)
]]

if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1],
  'stock', ARGV[1], 'remaining', ARGV[1], 'starts', ARGV[2], 'ends', ARGV[3],
  'slot', ARGV[4], 'seq', 0, 'rate', ARGV[5], 'burst', ARGV[6], 'name', ARGV[7], 'limit', ARGV[8])
return 1
