--[[
  Raises a fence counter to at least a value (the write half of RedLock's quorum max-register),
  and the fence of the owner's hold on this master with it.

  Input:
    KEYS[1] fence counter
    KEYS[2] lock key (same slot)
    ARGV[1] fence value
    ARGV[2] owner whose hold the fence was published for; '' for none

  Output:
    the counter's value after the call
]]
local rcall = redis.call
local lock, owner = KEYS[2], ARGV[2]
local wanted = tonumber(ARGV[1])
-- The hold keeps the published fence, not the lower one this master drew: a re-entry that a
-- different majority answers then reports the fence the first handle was given.
if owner ~= '' and rcall('hexists', lock, owner) == 1 and tonumber(rcall('hget', lock, '') or '0') < wanted then
  rcall('hset', lock, '', ARGV[1])
end
local current = tonumber(rcall('get', KEYS[1]) or '0')
if current < wanted then
  rcall('set', KEYS[1], ARGV[1])
  return wanted
end
return current
