--[[
  One attempt at a Redisson fair lock (RedissonFairLock.tryLockInnerAsync, both variants).

  Waiters queue in FIFO order; each has a deadline in the timeout zset after which it counts as
  dead. Dead waiters at the head are dropped first. The lock goes to a caller only when it is
  free and nobody, or the caller itself, heads the queue. A waiting caller not yet queued joins
  at the tail with a deadline one wait allowance after the waiter ahead of it (or after the
  holder's lease); taking the lock moves every later deadline one allowance closer.

  KEYS[1] lock hash
  KEYS[2] queue list redisson_lock_queue:{name}
  KEYS[3] deadline zset redisson_lock_timeout:{name}
  KEYS[4] fence counter redisson_lock_token:{name} (never expires; see the RLock acquire script)
  ARGV[1] lease in ms
  ARGV[2] owner field
  ARGV[3] wait allowance in ms (Redisson's fairLockWaitTimeout, or the caller's wait)
  ARGV[4] the caller's clock, epoch ms
  ARGV[5] 1 to join the queue when the lock is busy, 0 to try once without queueing

  Returns {1, holds, fence, ttl} when taken or re-entered (fence: drawn from the counter by a
  first acquisition, read back by a re-entry; ttl: the hash's TTL now, as for the RLock a
  re-entry never shortens it), {0, ms} when busy: the expected wait for a queued caller, else
  the holder's PTTL (0 when the lock is free but another waiter is first).
]]
local lock, queue, deadlines, counter = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, allowance, now = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])

while true do
  local head = redis.call('lindex', queue, 0)
  if not head then break end
  local deadline = tonumber(redis.call('zscore', deadlines, head))
  if deadline and deadline > now then break end
  redis.call('zrem', deadlines, head)
  redis.call('lpop', queue)
end

if redis.call('exists', lock) == 0 then
  local head = redis.call('lindex', queue, 0)
  if not head or head == owner then
    redis.call('lpop', queue)
    redis.call('zrem', deadlines, owner)
    for _, waiter in ipairs(redis.call('zrange', deadlines, 0, -1)) do
      redis.call('zincrby', deadlines, -allowance, waiter)
    end
    -- The fence first: if the counter cannot be incremented, the lock has not been written.
    local fence = redis.call('incr', counter)
    redis.call('hset', lock, owner, 1)
    redis.call('pexpire', lock, ARGV[1])
    return {1, 1, fence, tonumber(ARGV[1])}
  end
end

if redis.call('hexists', lock, owner) == 1 then
  local holds = redis.call('hincrby', lock, owner, 1)
  local ttl = math.max(redis.call('pttl', lock), tonumber(ARGV[1]))
  redis.call('pexpire', lock, ttl)
  return {1, holds, tonumber(redis.call('get', counter) or '0'), ttl}
end

if ARGV[5] == '0' then
  return {0, redis.call('pttl', lock)}
end

if redis.call('zscore', deadlines, owner) then
  return {0, math.max(0, redis.call('pttl', lock))}
end

local ahead = redis.call('lindex', queue, -1)
local ahead_deadline = ahead and ahead ~= owner and tonumber(redis.call('zscore', deadlines, ahead))
local expected
if ahead_deadline then
  expected = ahead_deadline - now
else
  expected = redis.call('pttl', lock)
end
if redis.call('zadd', deadlines, expected + allowance + now, owner) == 1 then
  redis.call('rpush', queue, owner)
end
return {0, expected}
