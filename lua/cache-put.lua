#!lua flags=allow-key-locking
--[[
cache-put.lua: write a cache entry if it is newer than what is there (set-if-newer).

A rebuild that began before the last eviction (its version at or below the floor), or before the
rebuild that wrote the entry now there, describes an older database and is refused: an old
read can never overwrite a newer one, whatever order the writes arrive in.

KEYS
  1  entry hash { v, staleAt, body }   2  floor (string, ms; may be absent)
ARGV
  1  version   the Redis time at which the read that built the body began (ms)
  2  body
  3  soft TTL (ms): the entry is stale after it
  4  hard TTL (ms): the entry is gone after it (>= soft TTL)
  5  "1" to refuse older versions; "0" writes whatever comes, as if it were built now, the
     way a cache without versions behaves (only to show the failure)
Replies
  1  written
  0  refused: older than the entry there or than the last eviction
]]

local version = tonumber(ARGV[1])
if ARGV[5] == '1' then
  local current = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
  local floor = tonumber(redis.call('GET', KEYS[2]) or '0')
  if version < current or version <= floor then
    return 0
  end
end
local time = redis.call('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if ARGV[5] ~= '1' then
  version = nowMs
end
redis.call('HSET', KEYS[1], 'v', version, 'staleAt', nowMs + tonumber(ARGV[3]), 'body', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
