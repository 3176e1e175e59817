#!lua flags=allow-key-locking
--[[
return.lua: give an order's units back to the sale and take them off the buyer's hold, once.
Used for every order whose units come back: dead-lettered (it never settled), expired
unpaid, cancelled. Idempotent per order id: a second call for the same order changes
nothing, so a retry after a timeout, a redelivered message and the sweep can all call it.

An order bought in a presale lane (docs/lanes.md) gives its units back to the lane's count
too (`ls:<lane>`, `ls:<lane>:<variant>`), and its use back to the access code it spent while
the sale's public start has not come (from then no code is asked for, and the use stays spent).
The meta hash's `rtn` counts the units given back, so the waiting room can measure how fast
they come (lua/waiting-room-progress.lua).

KEYS (all share the sale's hash tag; docs/architecture.md, "The sale's Redis layout")
  1  sale meta hash   then the keys of the buyer's bucket (the order's records live there):
  2  buyers hash   3  outbox zset   4  pending hash   5  returned set
  then, for an order bought in a lane: 6  the code's shard hash   7  the code batches hash
ARGV
  1  order id   2  user id   3  quantity   4  the bucket count the Worker chose the bucket by
  5  variant: its units go back to its own counter v:<id> too where the sale has variants
     ("default", or absent, for a sale without)
  6  the lane it was bought in   7  the hash of the access code it spent (both absent: the public sale)
Replies
  1  the units went back on sale now
  0  nothing to do: returned before
  -1 the sale is not in Redis (never re-created here): nothing done; a restore from D1
     counts the order's units as back (src/settlement/restore.ts), so the caller must not
     record them as returned now, or forget them
Errors: BUCKETS_CHANGED when ARGV 4 is not the sale's count (meta `buckets`, 1 when absent):
nothing done (the order's records are in another bucket than KEYS name)
]]

local meta, buyers, outbox, pending, returned = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local orderId, user, quantity, splitBy = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])

local loaded = redis.call('EXISTS', meta) == 1
if loaded and (tonumber(redis.call('HGET', meta, 'buckets')) or 1) ~= splitBy then
  return redis.error_reply('BUCKETS_CHANGED')
end
redis.call('ZREM', outbox, orderId)
redis.call('HDEL', pending, orderId)
if not loaded then
  return -1
end
if redis.call('SADD', returned, orderId) == 0 then
  return 0
end
redis.call('HINCRBY', meta, 'remaining', quantity)
redis.call('HINCRBY', meta, 'rtn', quantity)
local variant = ARGV[5] or 'default'
if redis.call('HEXISTS', meta, 'v:' .. variant) == 1 then
  redis.call('HINCRBY', meta, 'v:' .. variant, quantity)
end
local lane, code = ARGV[6], ARGV[7]
if lane and code then
  for _, field in ipairs({ 'ls:' .. lane, 'ls:' .. lane .. ':' .. variant }) do
    if redis.call('HEXISTS', meta, field) == 1 then
      redis.call('HINCRBY', meta, field, -quantity)
    end
  end
  local time = redis.call('TIME')
  local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  local record = redis.call('HGET', KEYS[6], code)
  local batch, codeLane, uses, rest = string.match(record or '', '^([^|]+)|([^|]+)|(%d+)|(.*)$')
  if batch and nowMs < (tonumber(redis.call('HGET', meta, 'starts')) or 0) then
    redis.call('HSET', KEYS[6], code, table.concat({ batch, codeLane, tonumber(uses) + 1, rest }, '|'))
    redis.call('HINCRBY', KEYS[7], batch .. ':spent', -1)
  end
end
local record = redis.call('HGET', buyers, user)
if record then
  local units, last = string.match(record, '^(%d+):(%d*)$')
  units = tonumber(units) - quantity
  if units > 0 then
    redis.call('HSET', buyers, user, units .. ':' .. last)
  else
    redis.call('HDEL', buyers, user)
  end
end
return 1
