#!lua flags=allow-key-locking
--[[
bloom.lua: a Bloom filter of ids in a Redis bit string: may an id exist?

"No" is certain; "maybe" is wrong for about 1% of absent ids when sized for the ids it holds
(src/shared/limits.ts: BLOOM). Each id sets `hashes` bits, at (h1 + i * h2) mod bits for
i = 0 .. hashes-1, h1 and h2 being the first two 32-bit words of the id's SHA-1 (double
hashing: two hashes give every probe). All integers stay below 2^53, exact in Lua's doubles.

The filter is trusted only once a fill from the database has gone through every id (the
ready marker) and while its bits exist: a lost filter must never answer "no" for a real id.
A fill runs a page at a time, over several calls, recording how far it got; if the bits are
lost meanwhile, the fill starts again from the first id.

KEYS
  1  bit string   2  ready marker   3  fill progress: the last id a fill has added
ARGV
  1  op   2  bits   3  hashes   then, by op:
     add    4..n  ids (a new sale)
     fill   4  the id this page starts after ("0": the first page)   5..n  the page's ids (none
            on an empty last page)
     has    4..n  ids
     ready  nothing (the fill went through every id)
Replies
  add    how many of the ids were new to the filter (some bit was not set yet)
  fill   how many were new, or -1 when the fill must go on from elsewhere: from the progress
         recorded, or from the start when the bits were lost (the caller reads it again)
  has    { ready, maybe... }: ready 0 when the filter cannot be trusted (then every maybe
         is 1); one 0/1 per id
  ready  1 marked ready; 0 the bits were lost meanwhile (fill again)
]]

local bitsKey, readyKey, fillKey = KEYS[1], KEYS[2], KEYS[3]
local op, bits, hashes = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])

local function probes(id)
  local digest = redis.sha1hex(id)
  local h1, h2 = tonumber(string.sub(digest, 1, 8), 16), tonumber(string.sub(digest, 9, 16), 16)
  local at = {}
  for i = 0, hashes - 1 do
    at[#at + 1] = (h1 + i * h2) % bits
  end
  return at
end

-- Bits gone (evicted, flushed) while the marker or a fill's progress stayed: neither may be
-- trusted, or the filter would deny every id it lost.
local function forgetIfLost()
  if redis.call('EXISTS', bitsKey) == 0 then
    redis.call('DEL', readyKey, fillKey)
    return true
  end
  return false
end

local function addAll(first)
  local added = 0
  for n = first, #ARGV do
    local new = 0
    for _, bit in ipairs(probes(ARGV[n])) do
      if redis.call('SETBIT', bitsKey, bit, 1) == 0 then
        new = 1
      end
    end
    added = added + new
  end
  return added
end

if op == 'add' then
  forgetIfLost()
  return addAll(4)
end

if op == 'fill' then
  local from = ARGV[4]
  if forgetIfLost() then
    if from ~= '0' then
      return -1
    end
    -- The bit string exists from the first page on, even when there is no id at all.
    redis.call('SETBIT', bitsKey, 0, 0)
  end
  if (redis.call('GET', fillKey) or '0') ~= from then
    return -1
  end
  local added = addAll(5)
  redis.call('SET', fillKey, ARGV[#ARGV])
  return added
end

if op == 'ready' then
  if forgetIfLost() then
    return 0
  end
  redis.call('SET', readyKey, 1)
  redis.call('DEL', fillKey)
  return 1
end

if op == 'has' then
  local ready = redis.call('EXISTS', bitsKey) == 1 and redis.call('EXISTS', readyKey) == 1
  local reply = { ready and 1 or 0 }
  for n = 4, #ARGV do
    local maybe = 1
    if ready then
      for _, bit in ipairs(probes(ARGV[n])) do
        if redis.call('GETBIT', bitsKey, bit) == 0 then
          maybe = 0
          break
        end
      end
    end
    reply[#reply + 1] = maybe
  end
  return reply
end

return redis.error_reply('bloom.lua: op must be add, fill, has or ready')
