--[[
  Frees a Redisson RLock whoever holds it (RedissonLock.forceUnlockAsync), with the attempt
  latches of its holders (see attempt.lua, prefixed to this script).

  The message is published before anything is deleted, so that a user the ACL refuses the
  channel fails with nothing changed (see release.lua).

  KEYS[1] lock hash
  KEYS[2] channel redisson_lock__channel:{name}
  KEYS[3] attempt latch prefix redisson_lock_attempt:{name}
  ARGV[1] unlock message ("0")
  ARGV[2] "publish" or "spublish"

  Returns 1 when a lock was deleted (and the message published), 0 when there was none.
]]
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
redis.call(ARGV[2], KEYS[2], ARGV[1])
forgetAttempts(KEYS[1], KEYS[3])
redis.call('del', KEYS[1])
return 1
