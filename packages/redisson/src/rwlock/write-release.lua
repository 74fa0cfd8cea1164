--[[
  Gives up one write hold of a Redisson read-write lock (RedissonWriteLock.unlockInnerAsync).

  The last write hold deletes the hash and publishes "1" (wakes every waiter), unless the
  writer still holds read locks: then the lock is downgraded to mode "read", silently and with
  its TTL unchanged. As in Redisson, an unlock of a lock that no longer exists still publishes
  but answers nil.

  KEYS[1] lock hash
  KEYS[2] channel redisson_rwlock:{name}
  KEYS[3] latch redisson_unlock_latch:{name}:<request id>
  ARGV[1] unlock message ("1")
  ARGV[2] lease in ms re-applied while holds remain (never shortening the TTL: the remaining
          holds were promised theirs)
  ARGV[3] writer field "<uuid>:<thread>:write"
  ARGV[4] "publish" or "spublish"
  ARGV[5] latch lifetime in ms

  Returns 1 freed or downgraded, 0 still write-held, nil when this writer held nothing.
]]
local earlier = redis.call('get', KEYS[3])
if earlier then
  return tonumber(earlier)
end
local lock = KEYS[1]
local mode = redis.call('hget', lock, 'mode')
if not mode then
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  redis.call('set', KEYS[3], 1, 'px', ARGV[5])
  return nil
end
if mode ~= 'write' or redis.call('hexists', lock, ARGV[3]) == 0 then
  return nil
end
if redis.call('hincrby', lock, ARGV[3], -1) > 0 then
  redis.call('pexpire', lock, math.max(redis.call('pttl', lock), tonumber(ARGV[2])))
  redis.call('set', KEYS[3], 0, 'px', ARGV[5])
  return 0
end
redis.call('hdel', lock, ARGV[3])
if redis.call('hlen', lock) == 1 then
  redis.call('del', lock)
  redis.call(ARGV[4], KEYS[2], ARGV[1])
else
  redis.call('hset', lock, 'mode', 'read')
end
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1
