--[[
  Gives up one read hold of a Redisson read-write lock (RedissonReadLock.unlockInnerAsync).

  The hold's timeout key goes (and the reader's fence key with its last hold); while other holds
  remain the hash lives as long as the longest remaining reader timeout key, or as it is under a
  writer (whose lease Redisson would cut to its read holds'). When nothing remains the hash is
  deleted and "0" published. As in Redisson, an unlock of a lock that no longer exists still
  publishes (waking waiters) but answers nil.

  KEYS[1] lock hash
  KEYS[2] channel redisson_rwlock:{name}
  KEYS[3] this reader's timeout key prefix {name}:<owner>:rwlock_timeout
  KEYS[4] key prefix of every reader's timeout keys ({name}, or the name when it has a "{")
  KEYS[5] this reader's fence key {name}:<owner>:rwlock_fence
  KEYS[6] latch redisson_unlock_latch:{name}:<request id>
  ARGV[1] unlock message ("0")
  ARGV[2] owner field
  ARGV[3] "publish" or "spublish"
  ARGV[4] latch lifetime in ms

  Returns 1 freed, 0 still held (by anyone), nil when this owner held no read lock.
]]
local earlier = redis.call('get', KEYS[6])
if earlier then
  return tonumber(earlier)
end
local lock = KEYS[1]
local mode = redis.call('hget', lock, 'mode')
if not mode then
  redis.call(ARGV[3], KEYS[2], ARGV[1])
  redis.call('set', KEYS[6], 1, 'px', ARGV[4])
  return nil
end
if redis.call('hexists', lock, ARGV[2]) == 0 then
  return nil
end
local left = redis.call('hincrby', lock, ARGV[2], -1)
if left == 0 then
  redis.call('hdel', lock, ARGV[2])
  redis.call('del', KEYS[5])
end
redis.call('del', KEYS[3] .. ':' .. (left + 1))

if redis.call('hlen', lock) > 1 then
  local longest = -3
  for _, field in ipairs(redis.call('hkeys', lock)) do
    local holds = tonumber(redis.call('hget', lock, field))
    if holds then
      for n = holds, 1, -1 do
        local ttl = redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. n)
        longest = math.max(longest, ttl)
      end
    end
  end
  if longest > 0 or mode == 'write' then
    if mode == 'read' then
      redis.call('pexpire', lock, longest)
    end
    redis.call('set', KEYS[6], 0, 'px', ARGV[4])
    return 0
  end
end

redis.call('del', lock)
redis.call(ARGV[3], KEYS[2], ARGV[1])
redis.call('set', KEYS[6], 1, 'px', ARGV[4])
return 1
