--[[
  Renews legacy timestamp locks that still hold the timestamp we wrote: writes a new timestamp
  (server time plus the lease) with a matching TTL. Never creates a key.

  Input:
    KEYS[1..n]   lock keys
    ARGV[1]      ms per unit of the stored timestamp: 1000 for seconds, 1 for milliseconds
    ARGV[2]      lease in those units
    ARGV[3..n+2] the timestamp we last wrote to each key (our token), in the same order

  Output:
    { r1, ..., rn }  the new timestamp (the new token) where renewed, 0 where the key is gone
                     or holds anything else
]]
local rcall = redis.call
local scale, lease = tonumber(ARGV[1]), tonumber(ARGV[2])
local time = rcall('time')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local value = string.format('%d', math.floor(nowMs / scale) + lease)
local results = {}

for i, lock in ipairs(KEYS) do
  if rcall('type', lock).ok == 'string' and rcall('get', lock) == ARGV[i + 2] then
    rcall('set', lock, value, 'PX', lease * scale)
    results[i] = value
  else
    results[i] = 0
  end
end

return results
