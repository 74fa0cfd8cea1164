--[[
  Frees a Redisson fair lock whoever holds it (RedissonFairLock.forceUnlockAsync), after
  dropping dead waiters at the head, and wakes the head of the queue.

  KEYS[1] lock hash
  KEYS[2] queue list redisson_lock_queue:{name}
  KEYS[3] deadline zset redisson_lock_timeout:{name}
  KEYS[4] channel prefix redisson_lock__channel:{name}
  ARGV[1] unlock message ("0")
  ARGV[2] the caller's clock, epoch ms
  ARGV[3] "publish" or "spublish"

  Returns 1 when a lock was deleted, 0 when there was none.
]]
local queue, deadlines = KEYS[2], KEYS[3]
local head = redis.call('lindex', queue, 0)
while head do
  local deadline = tonumber(redis.call('zscore', deadlines, head))
  if not deadline or deadline > tonumber(ARGV[2]) then break end
  redis.call('zrem', deadlines, head)
  redis.call('lpop', queue)
  head = redis.call('lindex', queue, 0)
end
if redis.call('del', KEYS[1]) == 0 then
  return 0
end
if head then
  redis.call(ARGV[3], KEYS[4] .. ':' .. head, ARGV[1])
end
return 1
