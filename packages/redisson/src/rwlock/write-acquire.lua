--[[
  Takes or re-enters the write half of a Redisson read-write lock (RedissonWriteLock).

  Only when nobody holds the hash, or this writer does. A re-entry gives the hash the lease but
  never shortens it, as the RLock does. Redisson adds the lease to the remaining TTL instead, and
  its partial unlock cuts it back to the lease; here a partial unlock never shortens the TTL (see
  write-release.lua), so an added lease would stay after the inner hold's unlock, and every
  lock()/unlock() pair nested in an outer hold would keep the lock another lease after a crash.
  Readers, the same thread included, block a writer: there is no read-to-write upgrade.

  A first acquisition draws its fence from the counter the RLock uses for the same name; a
  re-entry reads it back: while the writer holds the lock nobody else draws (its own read holds
  carry its fence, see the read acquire script).

  A copy of an attempt already applied (resent after a lost reply) answers the hold as it
  stands; see attempt.lua, prefixed to this script.

  KEYS[1] lock hash
  KEYS[2] fence counter redisson_lock_token:{name} (never expires)
  KEYS[3] optional: the writer's attempt latches redisson_lock_attempt:{name}:<writer field>
  ARGV[1] lease in ms
  ARGV[2] writer field "<uuid>:<thread>:write"
  ARGV[3] with KEYS[3]: this attempt's id

  Returns {1, holds, fence, ttl} when taken or re-entered (ttl: the hash's TTL now), {0, pttl}
  when held by readers or another writer.
]]
local lock, counter, latches, lease, attempt = KEYS[1], KEYS[2], KEYS[3], tonumber(ARGV[1]), ARGV[3]
if not mayExpire(lock, latches) then
  return redis.error_reply(EXPIRY_REFUSED)
end
local earlier = repeatedAttempt(latches, attempt, lock, ARGV[2])
if earlier then
  return {1, tonumber(redis.call('hget', lock, ARGV[2])), earlier, redis.call('pttl', lock)}
end
local mode = redis.call('hget', lock, 'mode')
if not mode then
  -- The fence first: if the counter cannot be incremented, nothing has been written.
  local fence = redis.call('incr', counter)
  recordAttempt(latches, attempt, fence, 1, lease)
  redis.call('hset', lock, 'mode', 'write', ARGV[2], 1)
  redis.call('pexpire', lock, lease)
  return {1, 1, fence, lease}
end
local holds = tonumber(redis.call('hget', lock, ARGV[2]))
if mode == 'write' and holds then
  local fence = tonumber(redis.call('get', counter) or '0')
  local ttl = math.max(redis.call('pttl', lock), lease)
  recordAttempt(latches, attempt, fence, holds + 1, ttl)
  holds = redis.call('hincrby', lock, ARGV[2], 1)
  redis.call('pexpire', lock, ttl)
  return {1, holds, fence, ttl}
end
return {0, redis.call('pttl', lock)}
