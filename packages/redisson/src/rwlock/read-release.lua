--[[
  Gives up one read hold of a Redisson read-write lock (RedissonReadLock.unlockInnerAsync).

  The hold's timeout key goes (and the reader's fence key with its last hold); while other holds
  remain the hash lives as long as the longest remaining reader timeout key, or as it is under a
  writer (whose lease Redisson would cut to its read holds'). When nothing remains the hash is
  deleted and "0" published. As in Redisson, an unlock of a lock that no longer exists still
  publishes (waking waiters) but answers nil. The reader's attempt latches go with its last
  hold, or with the hash (see attempt.lua).

  What the unlock leaves is worked out before anything is written, so that the message, when
  there is one, is published first: a user the ACL refuses the channel fails there with nothing
  changed (see the RLock release script).

  KEYS[1] lock hash
  KEYS[2] channel redisson_rwlock:{name}
  KEYS[3] this reader's timeout key prefix {name}:<owner>:rwlock_timeout
  KEYS[4] key prefix of every reader's timeout keys ({name}, or the name when it has a "{")
  KEYS[5] this reader's fence key {name}:<owner>:rwlock_fence
  KEYS[6] this reader's attempt latches redisson_lock_attempt:{name}:<owner>
  KEYS[7] latch redisson_unlock_latch:{name}:<request id>
  ARGV[1] unlock message ("0")
  ARGV[2] owner field
  ARGV[3] "publish" or "spublish"
  ARGV[#ARGV - 1] the id of the attempt that took the hold given back, taken out of the reader's
          attempt latches by a partial unlock (see attempt.lua, prefixed); '' when unknown
  ARGV[#ARGV] latch lifetime in ms

  Returns 1 freed, 0 still held (by anyone), nil when this owner held no read lock.
]]
local earlier = redis.call('get', KEYS[7])
if earlier then
  return tonumber(earlier)
end
local lock, owner = KEYS[1], ARGV[2]
local mode = redis.call('hget', lock, 'mode')
if not mode then
  redis.call(ARGV[3], KEYS[2], ARGV[1])
  redis.call('set', KEYS[7], 1, 'px', ARGV[#ARGV])
  return nil
end
local holds = tonumber(redis.call('hget', lock, owner))
if not holds then
  return nil
end
local left = holds - 1

-- The hash stays while a field besides "mode" is left and some read hold left has a live
-- timeout key, or while a writer holds it; this reader's holds count as `left`.
local stays, longest = false, -3
if redis.call('hlen', lock) - (left == 0 and 1 or 0) > 1 then
  for _, field in ipairs(redis.call('hkeys', lock)) do
    local count = tonumber(redis.call('hget', lock, field))
    if field == owner then
      count = left
    end
    if count then
      for n = count, 1, -1 do
        local ttl = redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. n)
        longest = math.max(longest, ttl)
      end
    end
  end
  stays = longest > 0 or mode == 'write'
end

if not stays then
  redis.call(ARGV[3], KEYS[2], ARGV[1])
  redis.call('del', lock, KEYS[6])
elseif left == 0 then
  redis.call('hdel', lock, owner)
  redis.call('del', KEYS[6])
else
  redis.call('hincrby', lock, owner, -1)
  forgetAttempt(KEYS[6], ARGV[#ARGV - 1])
end
if left == 0 then
  redis.call('del', KEYS[5])
end
redis.call('del', KEYS[3] .. ':' .. holds)
if not stays then
  redis.call('set', KEYS[7], 1, 'px', ARGV[#ARGV])
  return 1
end
if mode == 'read' then
  redis.call('pexpire', lock, longest)
end
redis.call('set', KEYS[7], 0, 'px', ARGV[#ARGV])
return 0
