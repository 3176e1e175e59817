#!lua flags=allow-key-locking
--[[
reentrant-release.lua: one release of a reentrant lock's hold. The hold count goes down by
one; at zero the key goes and the channel says "released". A caller that does not hold the
lock changes nothing.

KEYS
  1  lock    hash: owner id -> hold count
ARGV
  1  owner id
  2  the lock's channel, where waiters listen
Replies
  n >= 1  the owner still holds the lock n times
  0       the owner's last hold is released; the lock is free
  -1      the caller does not hold the lock; nothing changed
]]

local lock = KEYS[1]
local owner, channel = ARGV[1], ARGV[2]

if redis.call('HEXISTS', lock, owner) == 0 then return -1 end
local count = redis.call('HINCRBY', lock, owner, -1)
if count > 0 then return count end
redis.call('DEL', lock)
redis.call('PUBLISH', channel, 'released')
return 0
