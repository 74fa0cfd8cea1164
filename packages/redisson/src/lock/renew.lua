--[[
  Watchdog renewal of many RLocks at once (Redisson's LockTask): each lock gets the lease
  again only while its owner's field still exists, so a lost lock is never re-created; a lease
  is never shortened, since holds nested in this one (a read hold of a writer) may have been
  promised longer. The field's attempt latches live as long as the lock they protect from a
  resent attempt (attempt.lua is prefixed to this script).

  KEYS[i]     lock hash i (all in one slot on a cluster)
  KEYS[n + i] attempt latches of lock i's field, redisson_lock_attempt:{name}:<field> (n locks)
  ARGV[1]     lease in ms
  ARGV[1 + i] owner field of lock i

  Returns one integer per lock: its hold count when renewed, 0 when no longer held.
]]
local lease = tonumber(ARGV[1])
local count = #KEYS / 2
local renewed = {}
for i = 1, count do
  local lock = KEYS[i]
  local holds = tonumber(redis.call('hget', lock, ARGV[i + 1]))
  if holds then
    local ttl = math.max(redis.call('pttl', lock), lease)
    redis.call('pexpire', lock, ttl)
    keepAttempts(KEYS[count + i], ttl)
    renewed[i] = holds
  else
    renewed[i] = 0
  end
end
return renewed
