--[[
  Gives back the hold one acquire attempt of a fair lock added, when the engine no longer wants
  it: its reply came after the attempt had timed out (the owner's connection was slow, or
  dropped and ioredis resent it). The attempt is found by its latch in the owner's attempt list
  (attempt.lua, prefixed to this script); a copy of this undo, or the undo of an attempt this
  server never applied, finds none and changes nothing.

  Taken off as an unlock, the owner's last hold would free the lock for the head of the queue,
  though the owner, whose call still waits, was served in its turn: its next attempt would find
  it behind the waiter it was ahead of. So while someone waits, that hold stays, its latch
  replaced by its marker (turn.lua, prefixed to this script), for at most `grace` ms: the
  owner's next attempt claims it as its grant (acquire.lua), the owner giving up frees it and
  wakes the head (give-up.lua), and otherwise it expires and the head takes the lock as from
  any expired holder. Keeping it wakes the head first, as an unlock does (before anything is
  written): nothing is published when the kept grant expires, and a Java waiter polls by itself
  only at the end of the TTL it last read (the previous holder's); woken, it polls, is refused,
  and sleeps the kept grant's.
  An attempt that could not wait (its latch id ends in "!", see FairLockProtocol.acquire) took
  no turn and has no next attempt coming: its last hold is freed as an unlock frees it, waking
  the head before anything is written (see the release script), and so is any last hold with
  nobody waiting, and the grant of a call that had already ended (gave up, aborted) when the
  engine gave it back: its abandon came first and found nothing to free.

  KEYS[1] lock hash
  KEYS[2] queue list redisson_lock_queue:{name}
  KEYS[3] deadline zset redisson_lock_timeout:{name}
  KEYS[4] channel prefix redisson_lock__channel:{name} (a waiter's channel adds ":<owner>")
  KEYS[5] the owner's attempt latches redisson_lock_attempt:{name}:<owner>
  ARGV[1] owner field
  ARGV[2] the attempt id
  ARGV[3] grace in ms: how long a kept turn waits for the owner's next attempt
  ARGV[4] the caller's clock, epoch ms
  ARGV[5] "publish" or "spublish"
  ARGV[6] unlock message ("0")
  ARGV[7] 1 when the acquire call had ended when the grant was given back (no next attempt comes)

  Returns 1 freed, 0 still held by the owner (a hold taken off, or its last one kept, or
  nothing to undo), nil when the owner holds nothing.
]]
local lock, queue, deadlines, latches = KEYS[1], KEYS[2], KEYS[3], KEYS[5]
local owner, attempt, grace = ARGV[1], ARGV[2], tonumber(ARGV[3])

local holds = tonumber(redis.call('hget', lock, owner))
if not holds then
  return nil
end
local applied, which = appliedAttempt(latches, attempt, attempt .. '!')
if not applied then
  return 0
end
local turn = which == 1 and ARGV[7] ~= '1'
if holds > 1 then
  redis.call('lrem', latches, 1, applied)
  redis.call('hincrby', lock, owner, -1)
  return 0
end

local dead, head = deadWaiters(queue, deadlines, tonumber(ARGV[4]))
if head and turn then
  local ttl = redis.call('pttl', lock)
  if ttl < 0 or ttl > grace then
    ttl = grace
  end
  -- Made before the first write: the marker reads TIME, which the ACL may refuse.
  local marker = turnMarker(tonumber(string.match(applied, '^(%d+):')), ttl)
  wakeHead(queue, deadlines, dead, head, ARGV[5], KEYS[4], ARGV[6])
  -- The marker replaces the whole list: the one hold left is the kept one, so the other
  -- entries are of holds given back, and it must be last (see attempt.lua). Pushed before
  -- the rest leaves: emptied, the list would be deleted and come back without a TTL. It
  -- expires with the kept grant.
  redis.call('rpush', latches, marker)
  redis.call('ltrim', latches, -1, -1)
  redis.call('pexpire', lock, ttl)
  redis.call('pexpire', latches, ttl)
  return 0
end
wakeHead(queue, deadlines, dead, head, ARGV[5], KEYS[4], ARGV[6])
redis.call('del', lock, latches)
return 1
