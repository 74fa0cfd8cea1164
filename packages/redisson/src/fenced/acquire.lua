--[[
  Takes or re-enters a Redisson fenced lock (RedissonFencedLock.tryLockInnerAsync): an RLock
  whose every acquisition, re-entry included, draws the next token from a counter that is
  never deleted or expired, so tokens only grow. As for the RLock, a re-entry never shortens
  the lease the owner's earlier holds were promised.

  A copy of an attempt already applied (resent after a lost reply) answers the hold as it
  stands, with the token that attempt drew; see attempt.lua, prefixed to this script.

  KEYS[1] lock hash
  KEYS[2] token counter redisson_lock_token:{name}
  KEYS[3] optional: the owner's attempt latches redisson_lock_attempt:{name}:<owner>
  ARGV[1] lease in ms
  ARGV[2] owner field
  ARGV[3] with KEYS[3]: this attempt's id

  Returns {1, holds, token, ttl} when taken or re-entered (ttl: the hash's TTL now, at least the
  lease), {0, pttl} when held by someone else.
]]
local lock, latches, owner, lease, attempt = KEYS[1], KEYS[3], ARGV[2], tonumber(ARGV[1]), ARGV[3]
if not mayExpire(lock, latches) then
  return redis.error_reply(EXPIRY_REFUSED)
end
local earlier = repeatedAttempt(latches, attempt, lock, owner)
if earlier then
  return {1, tonumber(redis.call('hget', lock, owner)), earlier, redis.call('pttl', lock)}
end
local holds = tonumber(redis.call('hget', lock, owner) or '0')
if holds == 0 and redis.call('exists', lock) == 1 then
  return {0, redis.call('pttl', lock)}
end
local token = redis.call('incr', KEYS[2])
local ttl = lease
if holds > 0 then
  ttl = math.max(redis.call('pttl', lock), lease)
end
recordAttempt(latches, attempt, token, holds + 1, ttl)
holds = redis.call('hincrby', lock, owner, 1)
redis.call('pexpire', lock, ttl)
return {1, holds, token, ttl}
