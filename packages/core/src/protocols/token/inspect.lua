--[[
  Reads a token lock without changing it.

  Input:
    KEYS[1] lock key
    KEYS[2] fence counter

  Output:
    { owner or false, holds, pttl, fence or false }
    owner and holds come from the lock hash (false/0 when free); pttl is PTTL of the lock key.
]]
local rcall = redis.call
local fields = rcall('hgetall', KEYS[1])
local fence = rcall('get', KEYS[2])
if #fields == 0 then
  return { false, 0, -2, fence }
end
return { fields[1], tonumber(fields[2]), rcall('pttl', KEYS[1]), fence }
