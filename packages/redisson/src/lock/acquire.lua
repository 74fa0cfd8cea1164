--[[
  Takes or re-enters a Redisson RLock (the layout of RedissonLock.tryLockInnerAsync).

  Free, or already ours: the owner's count goes up by one and the whole hash gets the full
  lease again, re-entry included, as Redisson does.

  The RLock layout stores no fence, so a first acquisition draws one from the counter that
  Redisson's RFencedLock keeps for the same name, and a re-entry reads it back: while this owner
  holds the lock no other owner can draw from it. Java RLock holders never draw from it, so
  fences order Node holders and FencedLock holders only.

  KEYS[1] lock hash (the bare lock name)
  KEYS[2] fence counter redisson_lock_token:{name} (never expires, as in Redisson)
  ARGV[1] lease in ms
  ARGV[2] owner field "<client uuid>:<thread id>"

  Returns {1, holds, fence} when taken or re-entered, {0, pttl} when held by someone else
  (pttl -1: the hash has no TTL).
]]
local lock, counter = KEYS[1], KEYS[2]
if redis.call('exists', lock) == 1 and redis.call('hexists', lock, ARGV[2]) == 0 then
  return {0, redis.call('pttl', lock)}
end
local holds = redis.call('hincrby', lock, ARGV[2], 1)
redis.call('pexpire', lock, ARGV[1])
if holds == 1 then
  return {1, holds, redis.call('incr', counter)}
end
return {1, holds, tonumber(redis.call('get', counter) or '0')}
