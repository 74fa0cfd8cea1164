--[[
  Takes or re-enters a Redisson fenced lock (RedissonFencedLock.tryLockInnerAsync): an RLock
  whose every acquisition, re-entry included, draws the next token from a counter that is
  never deleted or expired, so tokens only grow. As for the RLock, a re-entry never shortens
  the lease the owner's earlier holds were promised.

  KEYS[1] lock hash
  KEYS[2] token counter redisson_lock_token:{name}
  ARGV[1] lease in ms
  ARGV[2] owner field

  Returns {1, holds, token, ttl} when taken or re-entered (ttl: the hash's TTL now, at least the
  lease), {0, pttl} when held by someone else.
]]
local lock, lease = KEYS[1], tonumber(ARGV[1])
if redis.call('exists', lock) == 1 and redis.call('hexists', lock, ARGV[2]) == 0 then
  return {0, redis.call('pttl', lock)}
end
local token = redis.call('incr', KEYS[2])
local holds = redis.call('hincrby', lock, ARGV[2], 1)
local ttl = lease
if holds > 1 then
  ttl = math.max(redis.call('pttl', lock), lease)
end
redis.call('pexpire', lock, ttl)
return {1, holds, token, ttl}
