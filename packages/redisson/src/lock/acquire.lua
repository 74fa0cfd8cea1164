--[[
  Takes or re-enters a Redisson RLock (the layout of RedissonLock.tryLockInnerAsync).

  Free, or already ours: the owner's count goes up by one and the whole hash gets the full
  lease again, re-entry included, as Redisson does.

  The fence is the server's clock in microseconds (Redisson's layout has no counter for this
  lock kind): it grows from one acquisition to the next as long as the server clock does.

  KEYS[1] lock hash (the bare lock name)
  ARGV[1] lease in ms
  ARGV[2] owner field "<client uuid>:<thread id>"

  Returns {1, holds, fence} when taken or re-entered, {0, pttl} when held by someone else
  (pttl -1: the hash has no TTL).
]]
local lock = KEYS[1]
if redis.call('exists', lock) == 1 and redis.call('hexists', lock, ARGV[2]) == 0 then
  return {0, redis.call('pttl', lock)}
end
local holds = redis.call('hincrby', lock, ARGV[2], 1)
redis.call('pexpire', lock, ARGV[1])
local now = redis.call('time')
return {1, holds, now[1] * 1000000 + now[2]}
