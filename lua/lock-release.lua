#!lua flags=allow-key-locking
--[[
lock-release.lua: release a lock only while the caller still owns it (compare-and-delete),
and tell the waiters.

A plain DEL could free a lock that already expired and was taken by another holder;
comparing the owner token and deleting in one script leaves no gap between the two.
When a fair lock has a live waiter, the lock goes straight to it (a new lease and fencing
token, no round trip of the waiter's own), told on that waiter's own channel, so a crowd
of waiters is not woken for another's turn; otherwise the lock is deleted and the lock's
channel says "released". A caller that does not hold the lock (a waiter giving up) only
leaves the queue.

KEYS (all share the lock's hash tag): 1 lock, 2 fence, 3 queue, 4 places (see lock-acquire.lua)
ARGV
  1  the owner token the lock was acquired (or waited for) with
  2  the lock's channel, where unfair waiters listen
  3  the prefix of fair waiters' channels (+ owner token)
Replies
  1  the caller held the lock; it is released or handed over
  0  the caller did not hold it (expired, or another owner's); nothing changed but its place
Publishes "[<fence>,<lease ms>]" (JSON) on ARGV[3] .. <new holder's token>, or "released"
on ARGV[2].
]]

local lock, fence, queue, places = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, channel, grants = ARGV[1], ARGV[2], ARGV[3]

if redis.call('GET', lock) ~= token then
  redis.call('ZREM', queue, token)
  redis.call('HDEL', places, token)
  return 0
end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

while true do
  local head = redis.call('ZRANGE', queue, 0, 0)[1]
  if not head then break end
  local place = redis.call('HGET', places, head)
  redis.call('ZREM', queue, head)
  redis.call('HDEL', places, head)
  if place then
    local deadline, lease = string.match(place, '^(%d+):(%d+)$')
    if tonumber(deadline) >= now then
      redis.call('SET', lock, head, 'PX', lease)
      local minted = redis.call('INCR', fence)
      redis.call('PUBLISH', grants .. head, '[' .. minted .. ',' .. lease .. ']')
      return 1
    end
  end
end

redis.call('DEL', lock)
redis.call('PUBLISH', channel, 'released')
return 1
