#!lua flags=allow-key-locking
--[[
lock-acquire.lua: one attempt to take a lock (SET NX PX with an owner token), minting its
fencing token in the same step.

A fair lock serves its waiters in arrival order: a caller that finds the lock held (or
free but promised to an earlier waiter) takes a place in the queue, and the release hands
the lock straight to the first live place (lock-release.lua). A place lapses unless its
waiter retries within placeMs, so a waiter that died never holds the queue up for long.

KEYS (all share the lock's hash tag)
  1  lock      string: the holder's owner token, with the lease as its TTL
  2  fence     counter: the last fencing token minted
  3  queue     zset: waiting owner token -> arrival (ms), fair locks only
  4  places    hash: waiting owner token -> "<deadline ms>:<lease ms>", fair locks only
ARGV
  1  owner token (random per acquisition)
  2  lease, ms
  3  "1" for a fair lock (queue and hand-over), "0" for a plain one
  4  placeMs: how long a waiter's place is kept without a retry (fair locks)
Replies
  {1, fence, leaseLeftMs}  the caller holds the lock (now, or handed over by a release)
  {0, pttl}                held by another owner for pttl ms more; 0 when the lock is
                           free but promised to an earlier waiter
Time comes from Redis (TIME).
]]

local lock, fence, queue, places = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, lease, fair, placeMs = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4])

local holder = redis.call('GET', lock)
if holder == token then
  -- A release handed the lock over while this waiter was between attempts.
  return { 1, tonumber(redis.call('GET', fence)), redis.call('PTTL', lock) }
end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

-- The first place whose waiter is still retrying; lapsed places at the head are dropped.
local function firstLivePlace()
  while true do
    local head = redis.call('ZRANGE', queue, 0, 0)[1]
    if not head then return nil end
    local place = redis.call('HGET', places, head)
    if place and tonumber(string.match(place, '^(%d+)')) >= now then return head end
    redis.call('ZREM', queue, head)
    redis.call('HDEL', places, head)
  end
end

local function takePlace()
  redis.call('ZADD', queue, 'NX', now, token)
  redis.call('HSET', places, token, (now + placeMs) .. ':' .. lease)
  -- Every place lapses within placeMs of its last retry, and so may the whole queue.
  redis.call('PEXPIRE', queue, placeMs)
  redis.call('PEXPIRE', places, placeMs)
end

if not holder then
  if fair then
    local first = firstLivePlace()
    if first and first ~= token then
      takePlace()
      return { 0, 0 }
    end
    redis.call('ZREM', queue, token)
    redis.call('HDEL', places, token)
  end
  redis.call('SET', lock, token, 'PX', lease)
  return { 1, redis.call('INCR', fence), lease }
end

if fair then takePlace() end
return { 0, redis.call('PTTL', lock) }
