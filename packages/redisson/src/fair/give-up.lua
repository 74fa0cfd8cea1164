--[[
  A fair-lock waiter leaves the queue (RedissonFairLock.acquireFailedAsync): everyone behind
  it moves one wait allowance closer, then it is removed from the queue and the deadlines.

  A grant kept for it (turn.lua, undo.lua) that no attempt of its claimed goes first, as an
  unlock would free it: the head of the queue is woken (before anything is written, as in the
  release script), the dead waiters ahead of it dropped, and the lock and the owner's attempt
  latches deleted. Holds the same thread took meanwhile through an RLock handle of the same
  name are still its: then only the kept hold is taken off, its marker replaced by the one that
  has their last unlock wake the head of the queue (WAKE_FAIR_QUEUE, turn.lua), and the latches
  live as long as those holds.
  (dead-waiters.lua and turn.lua are prefixed to this script.)

  KEYS[1] queue list redisson_lock_queue:{name}
  KEYS[2] deadline zset redisson_lock_timeout:{name}
  KEYS[3] lock hash
  KEYS[4] channel prefix redisson_lock__channel:{name} (a waiter's channel adds ":<owner>")
  KEYS[5] the waiter's attempt latches redisson_lock_attempt:{name}:<owner>
  ARGV[1] owner field of the waiter
  ARGV[2] wait allowance in ms it joined with
  ARGV[3] the caller's clock, epoch ms
  ARGV[4] "publish" or "spublish"
  ARGV[5] unlock message ("0")

  Returns nil.
]]
local queue, deadlines, lock, latches = KEYS[1], KEYS[2], KEYS[3], KEYS[5]
local holds = tonumber(redis.call('hget', lock, ARGV[1]))
local kept, _, marker
if holds then
  kept, _, marker = keptTurn(latches)
end
if kept and holds > 1 then
  -- The latches' TTL first: a user refused PEXPIRE then fails before anything is written.
  local ttl = redis.call('pttl', lock)
  if redis.call('pttl', latches) < ttl then
    redis.call('pexpire', latches, ttl)
  end
  redis.call('hincrby', lock, ARGV[1], -1)
  -- Pushed before the marker leaves: emptied, the list would come back without a TTL.
  redis.call('rpush', latches, WAKE_FAIR_QUEUE)
  redis.call('lrem', latches, 1, marker)
elseif kept then
  local dead, head = deadWaiters(queue, deadlines, tonumber(ARGV[3]))
  wakeHead(queue, deadlines, dead, head, ARGV[4], KEYS[4], ARGV[5])
  redis.call('del', lock, latches)
end

local waiters = redis.call('lrange', queue, 0, -1)
local behind = false
for _, waiter in ipairs(waiters) do
  if behind then
    redis.call('zincrby', deadlines, -tonumber(ARGV[2]), waiter)
  elseif waiter == ARGV[1] then
    behind = true
  end
end
redis.call('zrem', deadlines, ARGV[1])
redis.call('lrem', queue, 0, ARGV[1])
return nil
