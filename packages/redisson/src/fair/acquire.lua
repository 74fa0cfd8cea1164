--[[
  One attempt at a Redisson fair lock (RedissonFairLock.tryLockInnerAsync, both variants).

  Waiters queue in FIFO order; each has a deadline in the timeout zset after which it counts as
  dead. Dead waiters at the head are dropped (once the fence counter has been incremented when
  the lock is taken: if it cannot be, nothing is written at all). The lock goes to a caller only when it is
  free and nobody, or the caller itself, heads the queue. A waiting caller not yet queued joins
  at the tail with a deadline one wait allowance after the waiter ahead of it (or after the
  holder's lease); taking the lock moves every later deadline one allowance closer.

  A copy of an attempt already applied (resent after a lost reply) answers the hold as it
  stands and changes nothing, not even the queue; see attempt.lua, prefixed to this script. An
  attempt of an owner whose late grant was kept for it (turn.lua, undo.lua) claims that grant,
  with its fence and a fresh lease, instead of counting a second hold.

  KEYS[1] lock hash
  KEYS[2] queue list redisson_lock_queue:{name}
  KEYS[3] deadline zset redisson_lock_timeout:{name}
  KEYS[4] fence counter redisson_lock_token:{name} (never expires; see the RLock acquire script)
  KEYS[5] optional: the owner's attempt latches redisson_lock_attempt:{name}:<owner>
  ARGV[1] lease in ms
  ARGV[2] owner field
  ARGV[3] wait allowance in ms (Redisson's fairLockWaitTimeout, or the caller's wait)
  ARGV[4] the caller's clock, epoch ms
  ARGV[5] 1 to join the queue when the lock is busy, 0 to try once without queueing
  ARGV[6] with KEYS[5]: this attempt's id

  Returns {1, holds, fence, ttl} when taken or re-entered (fence: drawn from the counter by a
  first acquisition, read back by a re-entry; ttl: the hash's TTL now, as for the RLock a
  re-entry never shortens it), {0, ms} when busy: the expected wait for a queued caller, else
  the holder's PTTL (0 when the lock is free but another waiter is first).
]]
local lock, queue, deadlines, counter, latches = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local owner, lease, allowance, now = ARGV[2], tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[4])
local attempt = ARGV[6]

if not mayExpire(lock, latches) then
  return redis.error_reply(EXPIRY_REFUSED)
end
local earlier = repeatedAttempt(latches, attempt, lock, owner)
if earlier then
  return {1, tonumber(redis.call('hget', lock, owner)), earlier, redis.call('pttl', lock)}
end

-- The dead waiters at the head are dropped only once the steps that can fail are behind.
local dead, head = deadWaiters(queue, deadlines, now)

if redis.call('exists', lock) == 0 and (not head or head == owner) then
  -- The fence first: if the counter cannot be incremented, nothing has been written.
  local fence = redis.call('incr', counter)
  recordAttempt(latches, attempt, fence, 1, lease)
  dropWaiters(queue, deadlines, dead)
  redis.call('lpop', queue)
  redis.call('zrem', deadlines, owner)
  for _, waiter in ipairs(redis.call('zrange', deadlines, 0, -1)) do
    redis.call('zincrby', deadlines, -allowance, waiter)
  end
  redis.call('hset', lock, owner, 1)
  redis.call('pexpire', lock, lease)
  return {1, 1, fence, lease}
end

local holds = tonumber(redis.call('hget', lock, owner))
-- The grant kept for this owner after the engine gave it back (undo.lua): this attempt's now.
-- Holds the same thread took meanwhile (through an RLock handle of the same name) stay counted,
-- and their TTL is not shortened, as a re-entry never shortens it.
local kept, _, marker
if holds and latches then
  kept, _, marker = keptTurn(latches)
end
if kept then
  local ttl = holds > 1 and math.max(redis.call('pttl', lock), lease) or lease
  -- Claimed, the turn is no longer kept: the marker goes, this attempt's latch answers for it.
  redis.call('lrem', latches, 1, marker)
  recordAttempt(latches, attempt, kept, holds, ttl)
  dropWaiters(queue, deadlines, dead)
  redis.call('pexpire', lock, ttl)
  return {1, holds, kept, ttl}
end
if holds then
  local fence = tonumber(redis.call('get', counter) or '0')
  local ttl = math.max(redis.call('pttl', lock), lease)
  recordAttempt(latches, attempt, fence, holds + 1, ttl)
  dropWaiters(queue, deadlines, dead)
  holds = redis.call('hincrby', lock, owner, 1)
  redis.call('pexpire', lock, ttl)
  return {1, holds, fence, ttl}
end

dropWaiters(queue, deadlines, dead)
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
