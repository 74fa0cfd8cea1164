--[[
  Takes a legacy timestamp lock (the SETNX + GETSET format of the old Redis docs, JedisLock and
  the ThinkPHP class), writing exactly what those fleets read, with the server's clock and a TTL.

  Input:
    KEYS[1] lock key: a plain string holding the holder's expiry as a decimal Unix timestamp
    KEYS[2] fence counter: a plain integer that never expires, named so no legacy fleet reads it
    ARGV[1] ms per unit of the stored timestamp: 1000 for seconds, 1 for milliseconds
    ARGV[2] lease in those units, added to now to make the stored timestamp; the TTL matches it
    ARGV[3] skew margin in ms: how far past its timestamp a TTL-less key must be to be taken over

  Output:
    { 1, fence, value }  acquired: value is the timestamp written, the caller's token
    { 0, remaining }     held: the key's remaining PTTL, or for a TTL-less key the ms until it
                         may be taken over
    -1                   the key holds another Redis type (a lock of another format)
    -2                   the key's value is not a decimal timestamp
]]
local rcall = redis.call
local lock, counter = KEYS[1], KEYS[2]
local scale, lease, margin = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])

-- Server time, so that no client clock decides who holds the lock.
local time = rcall('time')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local value = string.format('%d', math.floor(nowMs / scale) + lease)
local leaseMs = lease * scale

if rcall('set', lock, value, 'NX', 'PX', leaseMs) then
  return { 1, rcall('incr', counter), value }
end

if rcall('type', lock).ok ~= 'string' then
  return -1
end

local stored = rcall('get', lock)
if not string.match(stored, '^%d+$') then
  return -2
end

-- A key with a TTL is left to Redis to expire, whatever its timestamp says: taking it over is
-- how two holders appear when clocks disagree.
local pttl = rcall('pttl', lock)
if pttl >= 0 then
  return { 0, pttl }
end

local wait = tonumber(stored) * scale + margin - nowMs
if wait > 0 then
  return { 0, wait }
end

rcall('set', lock, value, 'PX', leaseMs)
return { 1, rcall('incr', counter), value }
