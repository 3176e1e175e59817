#!lua flags=allow-key-locking
--[[
semaphore-release.lua: give a permit back by its id, and tell the waiters.

KEYS
  1  permits  zset: permit id -> expiry (ms, Redis time)
ARGV
  1  the permit's id
  2  the semaphore's channel, where waiters listen
Replies
  1  the permit was live and is back
  0  no live permit has this id (released already, or lapsed and returned by itself)
Publishes "released" on ARGV[2] when a permit comes back.
]]

local permits = KEYS[1]
local id, channel = ARGV[1], ARGV[2]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local expiry = redis.call('ZSCORE', permits, id)
if not expiry then return 0 end
redis.call('ZREM', permits, id)
if tonumber(expiry) <= now then return 0 end
redis.call('PUBLISH', channel, 'released')
return 1
