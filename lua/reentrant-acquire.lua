#!lua flags=allow-key-locking
--[[
reentrant-acquire.lua: take a reentrant lock for an owner (a request, a task), or take it
again while holding it. The lock is a hash owner -> hold count; every take refreshes the
lease. A first take mints a fencing token; a re-entry answers the one its hold began with
(nobody else can have taken the lock since).

KEYS (all share the lock's hash tag)
  1  lock    hash: owner id -> hold count, with the lease as its TTL
  2  fence   counter: the last fencing token minted
ARGV
  1  owner id
  2  lease, ms
Replies
  {1, fence, holdCount}  the owner holds the lock, holdCount times
  {0, pttl, 0}           another owner holds it for pttl ms more
]]

local lock, fence = KEYS[1], KEYS[2]
local owner, lease = ARGV[1], tonumber(ARGV[2])

if redis.call('EXISTS', lock) == 0 then
  redis.call('HSET', lock, owner, 1)
  redis.call('PEXPIRE', lock, lease)
  return { 1, redis.call('INCR', fence), 1 }
end
if redis.call('HEXISTS', lock, owner) == 1 then
  local count = redis.call('HINCRBY', lock, owner, 1)
  redis.call('PEXPIRE', lock, lease)
  return { 1, tonumber(redis.call('GET', fence)), count }
end
return { 0, redis.call('PTTL', lock), 0 }
