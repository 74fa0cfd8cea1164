--[[
  Renews token locks whose owner still holds them. Never creates a key.

  Input:
    KEYS[1..n] lock keys
    ARGV[1]    ttl in ms
    ARGV[2..n+1] the owner of each key, in the same order

  Output:
    { r1, ..., rn }  1 where the TTL was reset, 0 where the key is gone, held by someone else or
                     overwritten with another type
]]
local rcall = redis.call
local ttl = tonumber(ARGV[1])
local results = {}

for i, lock in ipairs(KEYS) do
  -- A key of another type holds no lock of ours: HEXISTS raises WRONGTYPE on it, which must not
  -- fail every key of the batch, so that key alone answers 0; any other error fails the call.
  -- (Caught rather than asked with TYPE, which the README's ACL list does not grant.)
  local held = redis.pcall('hexists', lock, ARGV[i + 1])
  if type(held) == 'table' and held.err then
    if string.sub(held.err, 1, 9) ~= 'WRONGTYPE' then
      return held
    end
    held = 0
  end
  if held == 1 then
    rcall('pexpire', lock, ttl)
    results[i] = 1
  else
    results[i] = 0
  end
end

return results
