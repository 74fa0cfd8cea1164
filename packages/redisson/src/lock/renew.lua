--[[
  Watchdog renewal of many RLocks at once (Redisson's LockTask): each lock gets the lease
  again only while its owner's field still exists, so a lost lock is never re-created; a lease
  is never shortened, since holds nested in this one (a read hold of a writer) may have been
  promised longer.

  KEYS[i]     lock hash i (all in one slot on a cluster)
  ARGV[1]     lease in ms
  ARGV[1 + i] owner field of lock i

  Returns one integer per lock: its hold count when renewed, 0 when no longer held.
]]
local lease = tonumber(ARGV[1])
local renewed = {}
for i, lock in ipairs(KEYS) do
  local holds = tonumber(redis.call('hget', lock, ARGV[i + 1]))
  if holds then
    redis.call('pexpire', lock, math.max(redis.call('pttl', lock), lease))
    renewed[i] = holds
  else
    renewed[i] = 0
  end
end
return renewed
