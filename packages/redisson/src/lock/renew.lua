--[[
  Watchdog renewal of many RLocks at once (Redisson's LockTask): each lock gets the lease
  again only while its owner's field still exists, so a lost lock is never re-created.

  KEYS[i]     lock hash i (all in one slot on a cluster)
  ARGV[1]     lease in ms
  ARGV[1 + i] owner field of lock i

  Returns one integer per lock: its hold count when renewed, 0 when no longer held.
]]
local renewed = {}
for i, lock in ipairs(KEYS) do
  local holds = tonumber(redis.call('hget', lock, ARGV[i + 1]))
  if holds then
    redis.call('pexpire', lock, ARGV[1])
    renewed[i] = holds
  else
    renewed[i] = 0
  end
end
return renewed
