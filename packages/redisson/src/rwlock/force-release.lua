--[[
  Frees one half of a Redisson read-write lock whoever holds it (RedissonReadLock /
  RedissonWriteLock.forceUnlockAsync): only while the hash is in that half's mode. Readers'
  timeout keys are left to expire.

  KEYS[1] lock hash
  KEYS[2] channel redisson_rwlock:{name}
  ARGV[1] mode this half frees ("read" or "write")
  ARGV[2] message to publish ("0" for read, "1" for write)
  ARGV[3] "publish" or "spublish"

  Returns 1 when the lock was deleted, 0 otherwise.
]]
if redis.call('hget', KEYS[1], 'mode') ~= ARGV[1] then
  return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], ARGV[2])
return 1
