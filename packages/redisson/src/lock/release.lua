--[[
  Gives up one hold of a Redisson RLock (RedissonLock.unlockInnerAsync).

  A retried call with the same request id answers from its latch and changes nothing. The last
  hold deletes the hash and publishes the unlock message that wakes Java and Node waiters.

  KEYS[1] lock hash
  KEYS[2] channel redisson_lock__channel:{name}
  KEYS[3] latch redisson_unlock_latch:{name}:<request id>
  ARGV[1] unlock message ("0")
  ARGV[2] lease in ms re-applied while holds remain (never shortening the TTL: the remaining
          holds were promised theirs)
  ARGV[3] owner field
  ARGV[4] "publish" or "spublish"
  ARGV[5] latch lifetime in ms

  Returns 1 freed, 0 still held by this owner, nil when this owner holds nothing.
]]
local earlier = redis.call('get', KEYS[3])
if earlier then
  return tonumber(earlier)
end
local lock = KEYS[1]
if redis.call('hexists', lock, ARGV[3]) == 0 then
  return nil
end
local outcome = 0
if redis.call('hincrby', lock, ARGV[3], -1) > 0 then
  redis.call('pexpire', lock, math.max(redis.call('pttl', lock), tonumber(ARGV[2])))
else
  redis.call('del', lock)
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  outcome = 1
end
redis.call('set', KEYS[3], outcome, 'px', ARGV[5])
return outcome
