--[[
  Prefixed to the legacy scripts that read a timestamp others may have written:
  `isTimestamp(stored, pttl)` tells whether the string `stored`, held by a key whose PTTL is
  `pttl`, is a legacy lock's timestamp (compared with `tonumber`, never as a string).

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
