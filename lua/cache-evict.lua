#!lua flags=allow-key-locking
--[[
cache-evict.lua: after a change in the database, drop cache entries and raise the floor.

Entries are deleted; the floor (the Redis time of this eviction) makes any entry built from
a read that began earlier count as missing, and refuses its write-back (cache-read.lua,
cache-put.lua). One floor may cover many entries (every page of a list) without naming them.

KEYS
  1  floor (string, ms)   2..n  entries to delete (all share the floor's hash tag)
ARGV
  1  how long the floor is kept (ms): at least the longest hard TTL of the entries under it
Reply
  the floor now (ms)
]]

local time = redis.call('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local floor = math.max(nowMs, tonumber(redis.call('GET', KEYS[1]) or '0'))
redis.call('SET', KEYS[1], floor, 'PX', ARGV[1])
if #KEYS > 1 then
  redis.call('DEL', unpack(KEYS, 2))
end
return floor
