--[[
  Prefixed to the acquire scripts: an acquire attempt counts one hold, however often it is sent.
  ioredis resends a command left unanswered when its connection resets, so an acquire whose
  reply was lost runs twice; the engine hands out one hold for it, and a second count would
  outlive the thread's unlock and lock everyone else out until the lease ends.

  An attempt the engine names passes its latch, redisson_lock_attempt:{name}:<attempt id>, last
  in KEYS; an unnamed one (a direct protocol call) passes none, and counts as often as it is
  sent. The latch holds the fence the attempt answered, and lives as long as the lock's TTL
  right after the attempt: a copy is sent only once ioredis has reconnected, however long the
  outage lasts (no fixed few seconds covers it), and the hold it would count again lives that
  long unless this client renews it, over that same connection, where ioredis resends the copy
  ahead of anything queued behind it. A copy that comes later finds the hold gone and takes
  the lock afresh, as the first sending would have; the engine gives back a grant it no longer
  waits for.

  `repeatedAttempt(latch, lock, field)`: that fence when this attempt was applied before and
  `field` still counts holds in `lock` (a copy: it answers the hold as it stands), else nil.
  `recordAttempt(latch, fence, ttl)`: once the steps that can fail are behind, before the first
  write, so that a failing attempt writes nothing; `ttl` is the lock's TTL the attempt sets.
]]
local function repeatedAttempt(latch, lock, field)
  if not latch then
    return nil
  end
  local fence = redis.call('get', latch)
  if fence and redis.call('hexists', lock, field) == 1 then
    return tonumber(fence)
  end
  return nil
end

local function recordAttempt(latch, fence, ttl)
  if latch then
    redis.call('set', latch, fence, 'px', ttl)
  end
end
