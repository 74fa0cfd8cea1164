--[[
  Gives up one hold of a Redisson RLock (RedissonLock.unlockInnerAsync).

  A retried call with the same request id answers from its latch and changes nothing. The last
  hold deletes the hash, with the owner's attempt latches (they protect no hold any more), and
  publishes the unlock message that wakes Java and Node waiters.

  The message is published before anything is written: a user the ACL refuses the channel
  fails there with the lock still held and no latch, so that its error tells the truth and a
  retry can still free the lock. Waiters see the same as after the DEL: Redis hands a script's
  messages to subscribers only once the script has run.

  A partial unlock that leaves the owner only a fair-lock turn kept for it (fair/turn.lua,
  prefixed to this script: the thread re-entered through this RLock while its fair-lock call
  waited for the grant) gives that grant back its own deadline rather than the lease it
  re-applies, so that a waiter that died holds the queue up no longer than the kept turn. It
  wakes the first live waiter of the fair queue first, dropping the dead ones ahead of it, as
  keeping the turn did (dead-waiters.lua, prefixed to this script): a Java waiter that polled
  while the re-entry was held sleeps on that TTL, and nothing is published when the grant
  expires. Only that case needs the fair queue's keys, which Java's RLock unlock never
  touches, so they are passed only when the script asks for them: without them it answers -1
  and writes nothing, and the caller runs it again with them. An ACL user kept off the fair
  lock's keys unlocks RLocks as in Java.

  The last hold also wakes the first live waiter of the fair queue, after the unlock message,
  when the thread's fair-lock call gave its kept turn up while it held these holds
  (WAKE_FAIR_QUEUE, turn.lua): they stand in for the fair grant those waiters queued for.

  KEYS[1] lock hash
  KEYS[2] channel redisson_lock__channel:{name} (a fair waiter's channel adds ":<owner>")
  KEYS[3] the owner's attempt latches redisson_lock_attempt:{name}:<owner>
  KEYS[4] optional: fair queue redisson_lock_queue:{name}
  KEYS[5] with KEYS[4]: deadline zset redisson_lock_timeout:{name}
  KEYS[#KEYS] latch redisson_unlock_latch:{name}:<request id>
  ARGV[1] unlock message ("0")
  ARGV[2] lease in ms re-applied while holds remain (never shortening the TTL: the remaining
          holds were promised theirs; the owner's attempt latches live as long, see attempt.lua,
          prefixed to this script)
  ARGV[3] owner field
  ARGV[4] "publish" or "spublish"
  ARGV[5] with KEYS[4]: the caller's clock, epoch ms (the fair waiters' deadlines are in theirs)
  ARGV[#ARGV - 1] the id of the attempt that took the hold given back, taken out of the owner's
          attempt latches by a partial unlock (see attempt.lua); '' when unknown
  ARGV[#ARGV] latch lifetime in ms

  Returns 1 freed, 0 still held by this owner, nil when this owner holds nothing, -1 (nothing
  written) when the fair queue's keys are needed and were not passed.
]]
local lock, latch, fair = KEYS[1], KEYS[#KEYS], #KEYS == 6
local earlier = redis.call('get', latch)
if earlier then
  return tonumber(earlier)
end
local holds = tonumber(redis.call('hget', lock, ARGV[3]))
if not holds then
  return nil
end
local outcome = 0
if holds > 1 then
  local kept = keptTurnLeft(KEYS[3], holds - 1)
  if kept and not fair then
    return -1
  end
  if kept then
    local dead, head = deadWaiters(KEYS[4], KEYS[5], tonumber(ARGV[5]))
    wakeHead(KEYS[4], KEYS[5], dead, head, ARGV[4], KEYS[2], ARGV[1])
  end
  local ttl = kept or math.max(redis.call('pttl', lock), tonumber(ARGV[2]))
  redis.call('hincrby', lock, ARGV[3], -1)
  redis.call('pexpire', lock, ttl)
  forgetAttempt(KEYS[3], ARGV[#ARGV - 1])
  if kept then
    -- The one hold left is the kept grant: the latches end with it, not with the re-entry's lease.
    redis.call('pexpire', KEYS[3], ttl)
  else
    keepAttempts(KEYS[3], ttl)
  end
else
  local wake = wakesFairQueue(KEYS[3])
  if wake and not fair then
    return -1
  end
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  if wake then
    local dead, head = deadWaiters(KEYS[4], KEYS[5], tonumber(ARGV[5]))
    wakeHead(KEYS[4], KEYS[5], dead, head, ARGV[4], KEYS[2], ARGV[1])
  end
  redis.call('del', lock, KEYS[3])
  outcome = 1
end
redis.call('set', latch, outcome, 'px', ARGV[#ARGV])
return outcome
