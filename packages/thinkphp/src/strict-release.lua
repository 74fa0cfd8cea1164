--[[
  The release script of the PHP class of seed 001, kept identical in behaviour for strict mode:
  it deletes the key only when its value is already <= the caller's clock, whoever wrote it.

  Input:
    KEYS[1] lock key
    ARGV[1] the caller's time() (whole seconds)

  Output:
    nil, always (as the seed's script)
]]
local stored = redis.call('GET', KEYS[1])
if stored and tonumber(stored) <= tonumber(ARGV[1]) then
  redis.call('DEL', KEYS[1])
end
return nil
