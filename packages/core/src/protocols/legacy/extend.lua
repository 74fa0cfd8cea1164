--[[
  Renews legacy timestamp locks we still hold: writes a new timestamp (server time plus the lease
  and the padding) with the lease as TTL, and moves the owner record along. Never creates a key.

  A lock is ours while its owner record names the caller and still describes the key: the
  value it records is the key's value now, and it expires with the key (see owner-record.lua).
  The timestamp the caller last saw is not asked for: a renewal of ours that Redis ran but
  answered too late (after the command timeout) rewrote it without the caller learning the new
  one, and the hold is still ours. A peer's takeover or rewrite leaves the record describing a
  value the key no longer holds, so it is never renewed, however late a renewal lands.

  Input:
    KEYS[2i-1]   lock key of item i
    KEYS[2i]     owner record of item i (hash { owner, holds, value, fence, releases })
    ARGV[1]      ms per unit of the stored timestamp: 1000 for seconds, 1 for milliseconds
    ARGV[2]      lease in those units: the TTL
    ARGV[3]      padding in those units: the timestamp is now + lease + padding (see acquire.lua)
    ARGV[i+3]    the owner of item i

  Output:
    { r1, ..., rn }  the new timestamp (the new token) where renewed, 0 where the key is gone
                     or held by anyone else
]]
local rcall = redis.call
local scale, lease, padding = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local leaseMs = lease * scale
local time = rcall('time')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local value = string.format('%d', math.floor(nowMs / scale) + lease + padding)
local results = {}

for i = 1, #KEYS / 2 do
  local lock, record, owner = KEYS[2 * i - 1], KEYS[2 * i], ARGV[i + 3]
  if ownedBy(record, lock, owner) then
    rcall('set', lock, value, 'PX', leaseMs)
    rcall('hset', record, 'value', value)
    expireWith(record, lock, leaseMs)
    results[i] = value
  else
    results[i] = 0
  end
end

return results
