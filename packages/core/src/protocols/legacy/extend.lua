--[[
  Renews legacy timestamp locks that still hold the timestamp we wrote, under an owner record
  naming us: writes a new timestamp (server time plus the lease and the padding) with the lease
  as TTL, and moves the owner record along. Never creates a key.

  Input:
    KEYS[2i-1]   lock key of item i
    KEYS[2i]     owner record of item i (hash { owner, holds, value, fence, releases })
    ARGV[1]      ms per unit of the stored timestamp: 1000 for seconds, 1 for milliseconds
    ARGV[2]      lease in those units: the TTL
    ARGV[3]      padding in those units: the timestamp is now + lease + padding (see acquire.lua)
    ARGV[2i+2]   the timestamp we last wrote to item i (our token)
    ARGV[2i+3]   the owner of item i

  Output:
    { r1, ..., rn }  the new timestamp (the new token) where renewed, 0 where the key is gone
                     or holds anything else
]]
local rcall = redis.call
local scale, lease, padding = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local leaseMs = lease * scale
local time = rcall('time')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local value = string.format('%d', math.floor(nowMs / scale) + lease + padding)
local results = {}

for i = 1, #KEYS / 2 do
  local lock, record, token, owner = KEYS[2 * i - 1], KEYS[2 * i], ARGV[2 * i + 2], ARGV[2 * i + 3]
  local mine = rcall('hmget', record, 'owner', 'value')
  if mine[1] == owner and mine[2] == token and rcall('type', lock).ok == 'string'
      and rcall('get', lock) == token and describes(record, lock, rcall('pttl', lock)) then
    rcall('set', lock, value, 'PX', leaseMs)
    rcall('hset', record, 'value', value)
    expireWith(record, lock, leaseMs)
    results[i] = value
  else
    results[i] = 0
  end
end

return results
