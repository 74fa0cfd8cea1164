--[[
  Frees one half of a Redisson read-write lock whoever holds it (RedissonReadLock /
  RedissonWriteLock.forceUnlockAsync): only while the hash is in that half's mode. Readers'
  timeout keys are left to expire; the holders' attempt latches go with the hash (see
  attempt.lua, prefixed to this script).

  The message is published before anything is deleted, so that a user the ACL refuses the
  channel fails with nothing changed (see the RLock release script).

  KEYS[1] lock hash
  KEYS[2] channel redisson_rwlock:{name}
  KEYS[3] attempt latch prefix redisson_lock_attempt:{name}
  ARGV[1] mode this half frees ("read" or "write")
  ARGV[2] message to publish ("0" for read, "1" for write)
  ARGV[3] "publish" or "spublish"

  Returns 1 when the lock was deleted, 0 otherwise.
]]
if redis.call('hget', KEYS[1], 'mode') ~= ARGV[1] then
  return 0
end
redis.call(ARGV[3], KEYS[2], ARGV[2])
forgetAttempts(KEYS[1], KEYS[3])
redis.call('del', KEYS[1])
return 1
