--[[
  Raises a fence counter to at least a value (the write half of RedLock's quorum max-register).

  Input:
    KEYS[1] fence counter
    ARGV[1] fence value

  Output:
    the counter's value after the call
]]
local rcall = redis.call
local current = tonumber(rcall('get', KEYS[1]) or '0')
local wanted = tonumber(ARGV[1])
if current < wanted then
  rcall('set', KEYS[1], ARGV[1])
  return wanted
end
return current
