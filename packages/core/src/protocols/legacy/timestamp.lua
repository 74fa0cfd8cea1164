--[[
  Prefixed to the legacy scripts that read a timestamp others may have written:
  `isTimestamp(stored, pttl)` tells whether the string `stored`, held by a key whose PTTL is
  `pttl`, is a legacy lock's timestamp (compared with `tonumber`, never as a string), and
  `inUnit(stored, scale)` whether it is one in the unit of `scale` (ms per unit).

  Decimal integers are what every legacy client writes. A PHP host given a fractional expire
  (B10, e.g. 2.5) writes `now + expire + 1` as a decimal fraction and then fails its EXPIRE, so
  such a key never has a TTL and only a takeover frees it: a fraction is accepted there alone.
]]
local function isTimestamp(stored, pttl)
  if string.match(stored, '^%d+$') then
    return true
  end
  return pttl == -1 and string.match(stored, '^%d+%.%d+$') ~= nil
end

-- Unix time is ten digits in seconds and thirteen in ms, for thousands of years either way: a
-- value that fits the other unit (before 1973 in ms, past the year 5000 in seconds) comes from a
-- fleet of that unit, whose live lock read in ms looks decades stale and would be taken over,
-- and whose stale lock read in seconds would be waited for until long after we are gone.
local UNIT_BOUNDARY = 1e11

local function inUnit(stored, scale)
  if scale == 1 then
    return tonumber(stored) >= UNIT_BOUNDARY
  end
  return tonumber(stored) < UNIT_BOUNDARY
end
