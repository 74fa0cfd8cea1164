--[[
  Gives up one hold of a Redisson fair lock (RedissonFairLock.unlockInnerAsync). Dead waiters
  at the head are dropped first (dead-waiters.lua is prefixed to this script); freeing the lock
  wakes only the head of the queue, on its own channel. As in Redisson, unlocking a lock that
  no longer exists counts as a success and still wakes the head, so a queue never stalls behind
  an expired holder. Freeing it deletes the owner's attempt latches (see attempt.lua).

  The head is woken before anything is written: a user the ACL refuses the channel fails there
  with nothing changed (see the RLock release script).

  KEYS[1] lock hash
  KEYS[2] queue list redisson_lock_queue:{name}
  KEYS[3] deadline zset redisson_lock_timeout:{name}
  KEYS[4] channel prefix redisson_lock__channel:{name} (a waiter's channel adds ":<owner>")
  KEYS[5] the owner's attempt latches redisson_lock_attempt:{name}:<owner>
  KEYS[6] latch redisson_unlock_latch:{name}:<request id>
  ARGV[1] unlock message ("0")
  ARGV[2] lease in ms re-applied while holds remain (never shortening the TTL: the remaining
          holds were promised theirs; the owner's attempt latches live as long, see attempt.lua,
          prefixed to this script)
  ARGV[3] owner field
  ARGV[4] the caller's clock, epoch ms
  ARGV[5] "publish" or "spublish"
  ARGV[6] the id of the attempt that took the hold given back, taken out of the owner's attempt
          latches by a partial unlock (see attempt.lua, prefixed), in either form it was recorded
          in; '' when unknown
  ARGV[7] latch lifetime in ms

  Returns 1 freed (or already free), 0 still held by this owner, nil when held by another.
]]
local earlier = redis.call('get', KEYS[6])
if earlier then
  return tonumber(earlier)
end
local lock, queue, deadlines = KEYS[1], KEYS[2], KEYS[3]
local dead, head = deadWaiters(queue, deadlines, tonumber(ARGV[4]))

if redis.call('exists', lock) == 1 then
  local holds = tonumber(redis.call('hget', lock, ARGV[3]))
  if not holds then
    dropWaiters(queue, deadlines, dead)
    return nil
  end
  if holds > 1 then
    dropWaiters(queue, deadlines, dead)
    redis.call('hincrby', lock, ARGV[3], -1)
    local ttl = math.max(redis.call('pttl', lock), tonumber(ARGV[2]))
    redis.call('pexpire', lock, ttl)
    keepAttempts(KEYS[5], ttl)
    -- An attempt that could not wait was recorded with a "!" (see FairLockProtocol.acquire).
    forgetAttempt(KEYS[5], ARGV[6], ARGV[6] .. '!')
    redis.call('set', KEYS[6], 0, 'px', ARGV[7])
    return 0
  end
end
wakeHead(queue, deadlines, dead, head, ARGV[5], KEYS[4], ARGV[1])
redis.call('del', lock, KEYS[5])
redis.call('set', KEYS[6], 1, 'px', ARGV[7])
return 1
