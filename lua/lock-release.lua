#!lua flags=allow-key-locking
--[[
lock-release.lua: release a lock only while the caller still owns it (compare-and-delete).

A plain DEL could free a lock that already expired and was taken by another holder;
comparing the owner token and deleting in one script leaves no gap between the two.

KEYS
  1  the lock key
ARGV
  1  the owner token the lock was acquired with
Replies
  1  the lock was held with this token and is now released
  0  the lock had expired or belongs to another owner; nothing was deleted
]]

if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
