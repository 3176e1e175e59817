#!lua flags=allow-key-locking
--[[
sliding-window-remaining.lua: what is left of a sliding window now, counting nothing.

@upstash/ratelimit's single-region sliding window (2.2.0), its getRemaining script without the
dynamic limit: read as sliding-window-limit.lua counts.

KEYS (named by the caller: <prefix>:<identifier>:<window number>)
  1  this window's count (string)   2  the previous window's count (string)
ARGV
  1  requests allowed per window   2  now (ms)   3  the window (ms)
Reply
  {remaining, limit}: remaining may be below 0 (the caller shows 0)
]]

local currentKey  = KEYS[1]
local previousKey = KEYS[2]
local tokens      = tonumber(ARGV[1])
local now         = ARGV[2]
local window      = ARGV[3]

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

local usedTokens = requestsInPreviousWindow + requestsInCurrentWindow
return {tokens - usedTokens, tokens}
