#!lua flags=allow-key-locking
--[[
sliding-window.lua: count requests in a sliding window, unless the window is full; or, counting
none, read what is left of it.

@upstash/ratelimit's single-region sliding window (2.2.0), its limit and getRemaining scripts
in one, without the dynamic limit (KEYS 3, never set here): the same keys, counts and expiry,
so the library and src/redis/sliding-window.ts count on each other's keys
(test/gateway/sliding-window.test.ts). The window weighs the previous window's count by the
share of it the sliding window still covers. `now` is the caller's clock, as in the library:
it names the windows' keys.

KEYS (named by the caller: <prefix>:<identifier>:<window number>)
  1  this window's count (string)   2  the previous window's count (string)
ARGV
  1  requests allowed per window   2  now (ms)   3  the window (ms)
  4  how many to count (0: none; nothing is written, as the library's getRemaining)
Reply
  {remaining, limit}: remaining is what is left after this request, -1 when refused (nothing
  counted); counting none, what is left now, which may be below 0 (the caller shows 0)
]]

local currentKey  = KEYS[1]
local previousKey = KEYS[2]
local tokens      = tonumber(ARGV[1])
local now         = ARGV[2]
local window      = ARGV[3]
local incrementBy = tonumber(ARGV[4])

local requestsInCurrentWindow = redis.call("GET", currentKey)
if requestsInCurrentWindow == false then
  requestsInCurrentWindow = 0
end

local requestsInPreviousWindow = redis.call("GET", previousKey)
if requestsInPreviousWindow == false then
  requestsInPreviousWindow = 0
end
local percentageInCurrent = ( now % window ) / window
-- weighted requests to consider from the previous window
requestsInPreviousWindow = math.floor(( 1 - percentageInCurrent ) * requestsInPreviousWindow)

if incrementBy == 0 then
  return {tokens - ( requestsInPreviousWindow + requestsInCurrentWindow ), tokens}
end

-- Only check limit if not refunding (negative rate)
if incrementBy > 0 and requestsInPreviousWindow + requestsInCurrentWindow >= tokens then
  return {-1, tokens}
end

local newValue = redis.call("INCRBY", currentKey, incrementBy)
if newValue == incrementBy then
  -- The first time this key is set: one expiry, long enough to be the next window's previous one
  redis.call("PEXPIRE", currentKey, window * 2 + 1000)
end
return {tokens - ( newValue + requestsInPreviousWindow ), tokens}
