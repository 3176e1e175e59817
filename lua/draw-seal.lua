#!lua flags=allow-key-locking
--[[
draw-seal.lua: seal a sale's draw entries once they have closed, so that nothing changes them
while the draw's run reads them (lua/draw-enter.lua refuses every call from then on). By
Redis' clock: sealed only at or after the entries' close. Sealing again changes nothing.

KEYS
  1  sale meta hash   qmode, dcloses (epoch ms)
  2  draw hash        sealed, standing
ARGV (none)
Reply: { sealed (1 | 0), standing entries, ms until the entries close (0 once sealed) }
  A sale that is not a draw (or that Redis does not hold) replies { 0, 0, -1 }.
]]

local meta, draw = KEYS[1], KEYS[2]
local sale = redis.call('HMGET', meta, 'qmode', 'dcloses')
if sale[1] ~= 'draw' then
  return { 0, 0, -1 }
end
local time = redis.call('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local closes = tonumber(sale[2])
if nowMs < closes and not redis.call('HGET', draw, 'sealed') then
  return { 0, tonumber(redis.call('HGET', draw, 'standing') or '0'), closes - nowMs }
end
redis.call('HSET', draw, 'sealed', nowMs)
return { 1, tonumber(redis.call('HGET', draw, 'standing') or '0'), 0 }
