--[[
  One attempt at a Redisson fair lock (RedissonFairLock.tryLockInnerAsync, both variants).

  Waiters queue in FIFO order; each has a deadline in the timeout zset after which it counts as
  dead. Dead waiters at the head are dropped (once the fence counter has been incremented when
  the lock is taken: if it cannot be, nothing is written at all). The lock goes to a caller only when it is
  free and nobody, or the caller itself, heads the queue. A waiting caller not yet queued joins
  at the tail with a deadline one wait allowance after the waiter ahead of it (or after the
  holder's lease); taking the lock moves every later deadline one allowance closer.

  A copy of an attempt already applied (resent after a lost reply) answers the hold as it
  stands and changes nothing, not even the queue; see attempt.lua, prefixed to this script.

  KEYS[1] lock hash
  KEYS[2] queue list redisson_lock_queue:{name}
  KEYS[3] deadline zset redisson_lock_timeout:{name}
  KEYS[4] fence counter redisson_lock_token:{name} (never expires; see the RLock acquire script)
  KEYS[5] optional: this attempt's latch redisson_lock_attempt:{name}:<attempt id>
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
local lock, queue, deadlines, counter, latch = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local owner, lease, allowance, now = ARGV[2], tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[4])

local earlier = repeatedAttempt(latch, lock, owner)
if earlier then
  return {1, tonumber(redis.call('hget', lock, owner)), earlier, redis.call('pttl', lock)}
end

-- The waiters at the head whose deadline has passed, found without writing; `head` is the first
-- one alive. A waiter with no deadline (its score evicted or deleted) stops the purge, as in
-- Redisson: it may be alive, and only its own attempt or abandon takes it out.
local dead = 0
local head = redis.call('lindex', queue, 0)
while head do
  local deadline = tonumber(redis.call('zscore', deadlines, head))
  if not deadline or deadline > now then break end
  dead = dead + 1
  head = redis.call('lindex', queue, dead)
end

local function dropDead()
  for _ = 1, dead do
    redis.call('zrem', deadlines, redis.call('lpop', queue))
  end
end

if redis.call('exists', lock) == 0 and (not head or head == owner) then
  -- The fence first: if the counter cannot be incremented, nothing has been written.
  local fence = redis.call('incr', counter)
  recordAttempt(latch, fence, lease)
  dropDead()
  redis.call('lpop', queue)
  redis.call('zrem', deadlines, owner)
  for _, waiter in ipairs(redis.call('zrange', deadlines, 0, -1)) do
    redis.call('zincrby', deadlines, -allowance, waiter)
  end
  redis.call('hset', lock, owner, 1)
  redis.call('pexpire', lock, lease)
  return {1, 1, fence, lease}
end

if redis.call('hexists', lock, owner) == 1 then
  local fence = tonumber(redis.call('get', counter) or '0')
  local ttl = math.max(redis.call('pttl', lock), lease)
  recordAttempt(latch, fence, ttl)
  dropDead()
  local holds = redis.call('hincrby', lock, owner, 1)
  redis.call('pexpire', lock, ttl)
  return {1, holds, fence, ttl}
end

dropDead()
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
