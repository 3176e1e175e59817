#!lua flags=allow-key-locking
--[[
semaphore-available.lua: how many of a semaphore's permits are free now.

KEYS
  1  permits  zset: permit id -> expiry (ms, Redis time)
ARGV
  1  how many permits the semaphore has
Reply: the permits not held by a live lease (never below 0)
Time comes from Redis (TIME).
]]

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local held = redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')
return math.max(0, tonumber(ARGV[1]) - held)
