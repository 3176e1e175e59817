#!lua flags=allow-key-locking
--[[
purge-chunk.lua: remove one chunk of a big key (a hash, set or sorted set): at most
ARGV[2] members per call, so no single command holds Redis for long. Freeing a hash of a
million fields with one DEL blocks every other client for the whole free (tens of
milliseconds); a chunk of 500 takes about one (npm run bench -- --only big-keys). Called
again with the cursor it returns until the key is gone; it goes by itself with its last member.

The scan and the removal run in one script: one round trip per chunk, and the members
never travel to the caller.

KEYS
  1  the key (any type; one that is not a hash, set or sorted set is unlinked at once)
ARGV
  1  scan cursor: "0" to start, then what the previous call returned
  2  chunk: the most members one call removes (1 to 5000: Lua's unpack takes about 8000)
Reply
  { next cursor, members removed, 1 while the key still exists else 0 }
  The key is done when it no longer exists. A cursor of "0" with the key still there means a
  full scan ended and members remain (added meanwhile): the next call starts another scan.
  When the scan returned more members than a chunk (a small key is scanned whole in one
  step), the extra ones stay and the same cursor comes back: scanning from it again finds
  them, the removed ones are gone.
]]

local key, cursor, chunk = KEYS[1], ARGV[1], tonumber(ARGV[2])
if not chunk or chunk < 1 or chunk > 5000 then
  return redis.error_reply('purge-chunk.lua: the chunk must be 1 to 5000 members')
end

local kind = redis.call('TYPE', key)['ok']
local scan, remove, stride
if kind == 'hash' then
  scan, remove, stride = 'HSCAN', 'HDEL', 2 -- field, value, field, value...
elseif kind == 'zset' then
  scan, remove, stride = 'ZSCAN', 'ZREM', 2 -- member, score, ...
elseif kind == 'set' then
  scan, remove, stride = 'SSCAN', 'SREM', 1
elseif kind == 'none' then
  return { '0', 0, 0 }
else
  redis.call('UNLINK', key) -- a string, the only other kind a sale keeps: one small value
  return { '0', 1, 0 }
end

local found = redis.call(scan, key, cursor, 'COUNT', chunk)
local members = {}
for i = 1, #found[2], stride do
  if #members == chunk then
    -- More than a chunk: take this chunk now, the rest from the same cursor next call.
    redis.call(remove, key, unpack(members))
    return { cursor, #members, redis.call('EXISTS', key) }
  end
  members[#members + 1] = found[2][i]
end
if #members > 0 then
  redis.call(remove, key, unpack(members))
end
return { found[1], #members, redis.call('EXISTS', key) }
