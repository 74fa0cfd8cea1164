--[[
  Takes or re-enters a Redisson fenced lock (RedissonFencedLock.tryLockInnerAsync): an RLock
  whose every acquisition, re-entry included, draws the next token from a counter that is
  never deleted or expired, so tokens only grow.

  KEYS[1] lock hash
  KEYS[2] token counter redisson_lock_token:{name}
  ARGV[1] lease in ms
  ARGV[2] owner field

  Returns {1, holds, token} when taken or re-entered, {0, pttl} when held by someone else.
]]
local lock = KEYS[1]
if redis.call('exists', lock) == 1 and redis.call('hexists', lock, ARGV[2]) == 0 then
  return {0, redis.call('pttl', lock)}
end
local token = redis.call('incr', KEYS[2])
local holds = redis.call('hincrby', lock, ARGV[2], 1)
redis.call('pexpire', lock, ARGV[1])
return {1, holds, token}
