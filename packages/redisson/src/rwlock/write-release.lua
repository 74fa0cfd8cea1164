--[[
  Gives up one write hold of a Redisson read-write lock (RedissonWriteLock.unlockInnerAsync).

  The last write hold deletes the hash and publishes "1" (wakes every waiter), unless the
  writer still holds read locks: then the lock is downgraded to mode "read", silently and with
  its TTL unchanged. As in Redisson, an unlock of a lock that no longer exists still publishes
  but answers nil. The writer's attempt latches go with its last write hold (see attempt.lua).

  The message is published before anything is written: a user the ACL refuses the channel fails
  there with nothing changed (see the RLock release script).

  KEYS[1] lock hash
  KEYS[2] channel redisson_rwlock:{name}
  KEYS[3] the writer's attempt latches redisson_lock_attempt:{name}:<writer field>
  KEYS[4] latch redisson_unlock_latch:{name}:<request id>
  ARGV[1] unlock message ("1")
  ARGV[2] lease in ms re-applied while holds remain (never shortening the TTL: the remaining
          holds were promised theirs; the owner's attempt latches live as long, see attempt.lua,
          prefixed to this script)
  ARGV[3] writer field "<uuid>:<thread>:write"
  ARGV[4] "publish" or "spublish"
  ARGV[#ARGV - 1] the id of the attempt that took the hold given back, taken out of the writer's
          attempt latches by a partial unlock (see attempt.lua); '' when unknown
  ARGV[#ARGV] latch lifetime in ms

  Returns 1 freed or downgraded, 0 still write-held, nil when this writer held nothing.
]]
local earlier = redis.call('get', KEYS[4])
if earlier then
  return tonumber(earlier)
end
local lock = KEYS[1]
local mode = redis.call('hget', lock, 'mode')
if not mode then
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  redis.call('set', KEYS[4], 1, 'px', ARGV[#ARGV])
  return nil
end
local holds = tonumber(redis.call('hget', lock, ARGV[3]))
if mode ~= 'write' or not holds then
  return nil
end
if holds > 1 then
  redis.call('hincrby', lock, ARGV[3], -1)
  local ttl = math.max(redis.call('pttl', lock), tonumber(ARGV[2]))
  redis.call('pexpire', lock, ttl)
  keepAttempts(KEYS[3], ttl)
  forgetAttempt(KEYS[3], ARGV[#ARGV - 1])
  redis.call('set', KEYS[4], 0, 'px', ARGV[#ARGV])
  return 0
end
-- Only "mode" and this writer's field: nobody holds a read lock, and the lock is freed.
if redis.call('hlen', lock) == 2 then
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  redis.call('del', lock)
else
  redis.call('hdel', lock, ARGV[3])
  redis.call('hset', lock, 'mode', 'read')
end
redis.call('del', KEYS[3])
redis.call('set', KEYS[4], 1, 'px', ARGV[#ARGV])
return 1
