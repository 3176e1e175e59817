#!lua flags=allow-key-locking
--[[
lock-renew.lua: extend a lease only while the caller still holds it (compare-and-PEXPIRE),
for every kind of lock in src/locks/: a lock (string: the owner token), a reentrant lock
(hash: owner -> hold count) and a semaphore (zset: permit id -> expiry ms).

KEYS
  1  the lock, reentrant lock or semaphore key
ARGV
  1  owner token, owner id or permit id
  2  the new lease, ms from now
Replies
  1  held, and the lease now ends leaseMs from now
  0  not held by the caller any more (expired, released, another owner); nothing changed
Time comes from Redis (TIME), for permits.
]]

local key, owner, lease = KEYS[1], ARGV[1], tonumber(ARGV[2])
local kind = redis.call('TYPE', key).ok

if kind == 'string' then
  if redis.call('GET', key) ~= owner then return 0 end
  redis.call('PEXPIRE', key, lease)
  return 1
elseif kind == 'hash' then
  if redis.call('HEXISTS', key, owner) == 0 then return 0 end
  redis.call('PEXPIRE', key, lease)
  return 1
elseif kind == 'zset' then
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  local expiry = redis.call('ZSCORE', key, owner)
  if not expiry or tonumber(expiry) <= now then return 0 end
  redis.call('ZADD', key, 'XX', now + lease, owner)
  if redis.call('PTTL', key) < lease then redis.call('PEXPIRE', key, lease) end
  return 1
end
return 0
