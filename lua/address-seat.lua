#!lua flags=allow-key-locking
--[[
address-seat.lua: the place of a user id among the user ids one client address brought to a
sale, in the order Redis first saw them (one account, one seat: src/admission/accounts-per-address.ts).

A place is given once and never moves: the same user id asking again gets the place it had.
Places are numbered by Redis itself (the set's size when the id first came), so requests from
isolates whose clocks disagree, arriving together, can never share or swap a place.

KEYS
  1  seats zset  user id -> place (0 for the first), for one sale and address
ARGV
  1  user id
  2  how long the record lasts (seconds), renewed by each call
Reply: the user id's place (0 for the first user id the address brought)
]]

local seats, user = KEYS[1], ARGV[1]
local place = redis.call('ZSCORE', seats, user)
if not place then
  place = redis.call('ZCARD', seats)
  redis.call('ZADD', seats, place, user)
end
redis.call('EXPIRE', seats, tonumber(ARGV[2]))
return tonumber(place)
