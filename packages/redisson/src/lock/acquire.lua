--[[
  Takes or re-enters a Redisson RLock (the layout of RedissonLock.tryLockInnerAsync).

  Free, or already ours: the owner's count goes up by one and the hash gets the lease, as in
  Redisson, except that a re-entry never shortens it: the holds this owner already has were
  promised their own leases (Redisson would PEXPIRE a shorter one and let them expire early).

  The RLock layout stores no fence, so a first acquisition draws one from the counter that
  Redisson's RFencedLock keeps for the same name, and a re-entry reads it back: while this owner
  holds the lock no other owner can draw from it. Java RLock holders never draw from it, so
  fences order Node holders and FencedLock holders only.

  A copy of an attempt already applied (resent after a lost reply) answers the hold as it
  stands; see attempt.lua, prefixed to this script.

  KEYS[1] lock hash (the bare lock name)
  KEYS[2] fence counter redisson_lock_token:{name} (never expires, as in Redisson)
  KEYS[3] optional: the owner's attempt latches redisson_lock_attempt:{name}:<owner>
  ARGV[1] lease in ms
  ARGV[2] owner field "<client uuid>:<thread id>"
  ARGV[3] with KEYS[3]: this attempt's id

  Returns {1, holds, fence, ttl} when taken or re-entered (ttl: the hash's TTL now, at least
  the lease), {0, pttl} when held by someone else (pttl -1: the hash has no TTL).
]]
local lock, counter, latches, owner, lease = KEYS[1], KEYS[2], KEYS[3], ARGV[2], tonumber(ARGV[1])
local attempt = ARGV[3]
if not mayExpire(lock, latches) then
  return redis.error_reply(EXPIRY_REFUSED)
end
local earlier = repeatedAttempt(latches, attempt, lock, owner)
if earlier then
  return {1, tonumber(redis.call('hget', lock, owner)), earlier, redis.call('pttl', lock)}
end
if redis.call('exists', lock) == 1 then
  local holds = tonumber(redis.call('hget', lock, owner))
  if not holds then
    return {0, redis.call('pttl', lock)}
  end
  local fence = tonumber(redis.call('get', counter) or '0')
  local ttl = math.max(redis.call('pttl', lock), lease)
  recordAttempt(latches, attempt, fence, holds + 1, ttl)
  holds = redis.call('hincrby', lock, owner, 1)
  redis.call('pexpire', lock, ttl)
  return {1, holds, fence, ttl}
end
-- The fence first: if the counter cannot be incremented, nothing has been written.
local fence = redis.call('incr', counter)
recordAttempt(latches, attempt, fence, 1, lease)
redis.call('hincrby', lock, owner, 1)
redis.call('pexpire', lock, lease)
return {1, 1, fence, lease}
