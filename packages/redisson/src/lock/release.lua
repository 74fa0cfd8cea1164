--[[
  Gives up one hold of a Redisson RLock (RedissonLock.unlockInnerAsync).

  A retried call with the same request id answers from its latch and changes nothing. The last
  hold deletes the hash, with the owner's attempt latches (they protect no hold any more), and
  publishes the unlock message that wakes Java and Node waiters.

  The message is published before anything is written: a user the ACL refuses the channel
  fails there with the lock still held and no latch, so that its error tells the truth and a
  retry can still free the lock. Waiters see the same as after the DEL: Redis hands a script's
  messages to subscribers only once the script has run.

  KEYS[1] lock hash
  KEYS[2] channel redisson_lock__channel:{name}
  KEYS[3] the owner's attempt latches redisson_lock_attempt:{name}:<owner>
  KEYS[4] latch redisson_unlock_latch:{name}:<request id>
  ARGV[1] unlock message ("0")
  ARGV[2] lease in ms re-applied while holds remain (never shortening the TTL: the remaining
          holds were promised theirs)
  ARGV[3] owner field
  ARGV[4] "publish" or "spublish"
  ARGV[5] latch lifetime in ms

  Returns 1 freed, 0 still held by this owner, nil when this owner holds nothing.
]]
local earlier = redis.call('get', KEYS[4])
if earlier then
  return tonumber(earlier)
end
local lock = KEYS[1]
local holds = tonumber(redis.call('hget', lock, ARGV[3]))
if not holds then
  return nil
end
local outcome = 0
if holds > 1 then
  redis.call('hincrby', lock, ARGV[3], -1)
  redis.call('pexpire', lock, math.max(redis.call('pttl', lock), tonumber(ARGV[2])))
else
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  redis.call('del', lock, KEYS[3])
  outcome = 1
end
redis.call('set', KEYS[4], outcome, 'px', ARGV[5])
return outcome
