--[[
  A fair-lock waiter leaves the queue (RedissonFairLock.acquireFailedAsync): everyone behind
  it moves one wait allowance closer, then it is removed from the queue and the deadlines.

  KEYS[1] queue list redisson_lock_queue:{name}
  KEYS[2] deadline zset redisson_lock_timeout:{name}
  ARGV[1] owner field of the waiter
  ARGV[2] wait allowance in ms it joined with

  Returns nil.
]]
local waiters = redis.call('lrange', KEYS[1], 0, -1)
local behind = false
for _, waiter in ipairs(waiters) do
  if behind then
    redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), waiter)
  elseif waiter == ARGV[1] then
    behind = true
  end
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])
return nil
