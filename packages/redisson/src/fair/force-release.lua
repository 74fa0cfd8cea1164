--[[
  Frees a Redisson fair lock whoever holds it (RedissonFairLock.forceUnlockAsync), with the
  attempt latches of its holders, after dropping dead waiters at the head, and wakes the head of
  the queue (dead-waiters.lua and attempt.lua are prefixed to this script).

  The head is woken before anything is written: a user the ACL refuses the channel fails there
  with nothing changed (see the RLock release script).

  KEYS[1] lock hash
  KEYS[2] queue list redisson_lock_queue:{name}
  KEYS[3] deadline zset redisson_lock_timeout:{name}
  KEYS[4] channel prefix redisson_lock__channel:{name}
  KEYS[5] attempt latch prefix redisson_lock_attempt:{name}
  ARGV[1] unlock message ("0")
  ARGV[2] the caller's clock, epoch ms
  ARGV[3] "publish" or "spublish"

  Returns 1 when a lock was deleted, 0 when there was none.
]]
local lock, queue, deadlines = KEYS[1], KEYS[2], KEYS[3]
local dead, head = deadWaiters(queue, deadlines, tonumber(ARGV[2]))
if redis.call('exists', lock) == 0 then
  dropWaiters(queue, deadlines, dead)
  return 0
end
wakeHead(queue, deadlines, dead, head, ARGV[3], KEYS[4], ARGV[1])
forgetAttempts(lock, KEYS[5])
redis.call('del', lock)
return 1
