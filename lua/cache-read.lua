#!lua flags=allow-key-locking
--[[
cache-read.lua: read one cache entry, with its logical expiry and the eviction floor.

An entry is a hash { v, staleAt, body }: v is the version it was built from (the Redis time
at which the read that built it began), staleAt its logical expiry (Redis time, ms). Its hard
TTL is longer, so a stale entry can still be served while one caller rebuilds it. The floor
is the Redis time of the last eviction: an entry built from a read that began before it
(or in its millisecond) describes the database before the change, and counts as missing.

Live figures that must never be cached (a sale's remaining stock, in total and per variant)
may be read in the same call: a whole small hash under the same hash tag.

KEYS
  1  entry hash   2  floor (string, ms; may be absent)   3  optional: the hash of live figures
ARGV
  none
Reply
  1  nowMs   the Redis time of this read (a rebuild that follows it carries it as its version)
  2  state   fresh | stale | missing
  3  body    the entry's body ("" when missing; "" is also a cached miss's body)
  4..  the live hash's field, value pairs (none without KEYS[3], or when it is absent)
]]

local time = redis.call('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local live = {}
if KEYS[3] then
  live = redis.call('HGETALL', KEYS[3])
end
local function reply(state, body)
  return { nowMs, state, body, unpack(live) }
end

local entry = redis.call('HMGET', KEYS[1], 'v', 'staleAt', 'body')
local v, staleAt, body = tonumber(entry[1]), tonumber(entry[2]), entry[3]
local floor = tonumber(redis.call('GET', KEYS[2]) or '0')
-- A read in the very millisecond of an eviction may have come before it: not trusted either.
if not v or not body or v <= floor then
  return reply('missing', '')
end
if nowMs >= staleAt then
  return reply('stale', body)
end
return reply('fresh', body)
