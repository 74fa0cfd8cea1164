--[[
  Frees a Redisson RLock whoever holds it (RedissonLock.forceUnlockAsync).

  KEYS[1] lock hash
  KEYS[2] channel redisson_lock__channel:{name}
  ARGV[1] unlock message ("0")
  ARGV[2] "publish" or "spublish"

  Returns 1 when a lock was deleted (and the message published), 0 when there was none.
]]
if redis.call('del', KEYS[1]) == 0 then
  return 0
end
redis.call(ARGV[2], KEYS[2], ARGV[1])
return 1
