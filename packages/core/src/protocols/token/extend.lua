--[[
  Renews token locks whose owner still holds them. Never creates a key.

  Input:
    KEYS[1..n] lock keys
    ARGV[1]    ttl in ms
    ARGV[2..n+1] the owner of each key, in the same order

  Output:
    { r1, ..., rn }  1 where the TTL was reset, 0 where the key is gone or held by someone else
]]
local rcall = redis.call
local ttl = tonumber(ARGV[1])
local results = {}

for i, lock in ipairs(KEYS) do
  if rcall('hexists', lock, ARGV[i + 1]) == 1 then
    rcall('pexpire', lock, ttl)
    results[i] = 1
  else
    results[i] = 0
  end
end

return results
