#!lua flags=allow-key-locking
--[[
semaphore-acquire.lua: take one of a semaphore's permits, each with its own id and lease.
Permits whose lease ran out return by themselves: they are dropped before counting.

KEYS
  1  permits  zset: permit id -> expiry (ms, Redis time)
ARGV
  1  how many permits the semaphore has
  2  the new permit's id (random)
  3  lease, ms
Replies
  {1, leaseMs}        the permit is taken
  {0, nextExpiryMs}   all permits are taken; the first of them lapses in nextExpiryMs
Time comes from Redis (TIME).
]]

local permits = KEYS[1]
local limit, id, lease = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

redis.call('ZREMRANGEBYSCORE', permits, '-inf', now)
if redis.call('ZCARD', permits) < limit then
  redis.call('ZADD', permits, now + lease, id)
  if redis.call('PTTL', permits) < lease then redis.call('PEXPIRE', permits, lease) end
  return { 1, lease }
end
local first = redis.call('ZRANGE', permits, 0, 0, 'WITHSCORES')
return { 0, tonumber(first[2]) - now }
