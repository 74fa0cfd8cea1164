--[[
  Gives up one hold of a Redisson fair lock (RedissonFairLock.unlockInnerAsync). Dead waiters
  at the head are dropped first; freeing the lock wakes only the head of the queue, on its own
  channel. As in Redisson, unlocking a lock that no longer exists counts as a success and still
  wakes the head, so a queue never stalls behind an expired holder.

  KEYS[1] lock hash
  KEYS[2] queue list redisson_lock_queue:{name}
  KEYS[3] deadline zset redisson_lock_timeout:{name}
  KEYS[4] channel prefix redisson_lock__channel:{name} (a waiter's channel adds ":<owner>")
  KEYS[5] latch redisson_unlock_latch:{name}:<request id>
  ARGV[1] unlock message ("0")
  ARGV[2] lease in ms re-applied while holds remain (never shortening the TTL: the remaining
          holds were promised theirs)
  ARGV[3] owner field
  ARGV[4] the caller's clock, epoch ms
  ARGV[5] "publish" or "spublish"
  ARGV[6] latch lifetime in ms

  Returns 1 freed (or already free), 0 still held by this owner, nil when held by another.
]]
local earlier = redis.call('get', KEYS[5])
if earlier then
  return tonumber(earlier)
end
local lock, queue, deadlines = KEYS[1], KEYS[2], KEYS[3]

while true do
  local head = redis.call('lindex', queue, 0)
  if not head then break end
  local deadline = tonumber(redis.call('zscore', deadlines, head))
  if not deadline or deadline > tonumber(ARGV[4]) then break end
  redis.call('zrem', deadlines, head)
  redis.call('lpop', queue)
end

if redis.call('exists', lock) == 1 then
  if redis.call('hexists', lock, ARGV[3]) == 0 then
    return nil
  end
  if redis.call('hincrby', lock, ARGV[3], -1) > 0 then
    redis.call('pexpire', lock, math.max(redis.call('pttl', lock), tonumber(ARGV[2])))
    redis.call('set', KEYS[5], 0, 'px', ARGV[6])
    return 0
  end
  redis.call('del', lock)
end
redis.call('set', KEYS[5], 1, 'px', ARGV[6])
local head = redis.call('lindex', queue, 0)
if head then
  redis.call(ARGV[5], KEYS[4] .. ':' .. head, ARGV[1])
end
return 1
