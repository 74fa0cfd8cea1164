--[[
  The acquire script of the PHP class of seed 001, kept identical in behaviour for strict mode
  (bug for bug: client time, takeover writing ARGV[1] + expire + 1, dead codes 1 and 3).

  Input:
    KEYS[1] lock key
    ARGV[1] the caller's time() + expire + 1
    ARGV[2] expire in seconds
    ARGV[3] the caller's time() (whole seconds)

  Output:
    0  acquired (SETNX, or GETSET takeover of a value <= ARGV[3])
    1  the key vanished between SETNX and GET (cannot happen inside a script)
    2  held: the stored value is > ARGV[3]
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
  return 2
end

local previous = tonumber(rcall('GETSET', lock, expiresAt + expire + 1))
if previous == stored then
  rcall('EXPIRE', lock, expire + 1)
  return 0
end
return 3
