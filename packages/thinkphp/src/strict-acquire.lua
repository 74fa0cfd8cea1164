--[[
  The acquire script of the PHP class of seed 001, kept identical in behaviour for strict mode
  (bug for bug: client time, takeover writing ARGV[1] + expire + 1, dead codes 1 and 3). Only
  its refusal answers more than the seed's: the holder's ms left, read without a round trip.

  Input:
    KEYS[1] lock key
    ARGV[1] the caller's time() + expire + 1
    ARGV[2] expire in seconds
    ARGV[3] the caller's time() (whole seconds)

  Output:
    0  acquired (SETNX, or GETSET takeover of a value <= ARGV[3])
    1  the key vanished between SETNX and GET (cannot happen inside a script)
    { 2, remaining }  held: the stored value is > ARGV[3]; remaining is the ms until the key
       expires or, counted in the caller's whole seconds, its time() reaches the value,
       whichever comes first (at most 2^31 - 1: a value centuries ahead must not overflow the
       reply)
    3  lost a GETSET race (cannot happen inside a script)
]]
local rcall = redis.call
local lock = KEYS[1]
local expiresAt, expire, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])

if rcall('SETNX', lock, expiresAt) == 1 then
  rcall('EXPIRE', lock, expire + 1)
  return 0
end

local stored = rcall('GET', lock)
if not stored then
  return 1
end
stored = tonumber(stored)
if stored > now then
  local untilStale = math.min((stored - now) * 1000, 2147483647)
  -- pcall: the seed's ACL list has no PTTL, and a user granted only that list must still be told
  -- "held", as by the seed, if without the ms left of the TTL.
  local pttl = redis.pcall('PTTL', lock)
  if type(pttl) ~= 'number' or pttl < 0 then
    return { 2, untilStale }
  end
  return { 2, math.min(pttl, untilStale) }
end

local previous = tonumber(rcall('GETSET', lock, expiresAt + expire + 1))
if previous == stored then
  rcall('EXPIRE', lock, expire + 1)
  return 0
end
return 3
