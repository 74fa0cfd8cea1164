--[[
  Reads a token lock without changing it.

  Input:
    KEYS[1] lock key
    KEYS[2] the per-key counter of earlier versions (holds they took keep their fence there)

  Output:
    { owner or false, holds, pttl, fence or false }
    owner and holds come from the lock hash (false/0 when free; the NUL-prefixed attempt field
    and the SOH field of applied release ids are not owners); pttl is PTTL of the lock key;
    fence is the holder's (false when free)
]]
local rcall = redis.call
local fields = rcall('hgetall', KEYS[1])
if #fields == 0 then
  return { false, 0, -2, false }
end
local owner, holds, fence = false, 0, false
for i = 1, #fields, 2 do
  if fields[i] == '' then
    fence = fields[i + 1]
  elseif fields[i] ~= '\1' and string.byte(fields[i], 1) ~= 0 then
    owner, holds = fields[i], tonumber(fields[i + 1])
  end
end
return { owner, holds, rcall('pttl', KEYS[1]), fence or rcall('get', KEYS[2]) }
