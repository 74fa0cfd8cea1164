--[[
  Prefixed to the acquire scripts (and to the force-release scripts, for forgetAttempts): an
  acquire attempt counts one hold, however often it is sent. ioredis resends a command left
  unanswered when its connection resets, so an acquire whose reply was lost runs twice; the
  engine hands out one hold for it, and a second count would outlive the thread's unlock and
  lock everyone else out until the lease ends.

  An attempt the engine names passes the latch list of its hash field,
  redisson_lock_attempt:{name}:<field>, last in KEYS, and its attempt id last in ARGV; an
  unnamed one (a direct protocol call) passes neither, and counts as often as it is sent. The
  list holds "<fence>:<attempt id>" of the field's latest applied attempts, newest first (the
  fair lock also keeps "<fence>:", naming no attempt, for a turn it keeps: see fair/turn.lua).

  How many it keeps: a copy can only be of an attempt whose reply the client has not read yet.
  ioredis resends on the one connection, in order and ahead of anything sent after the reset,
  and Redis answers in the order it applied, so those attempts are the newest applied ones. Each
  counted a hold that is still counted: a hold is given back only after a reply was read (an
  unlock of a handle, the engine undoing a late grant). So they are never more than the field's
  holds, and the list is cut to them at every attempt. A latch outliving its holds protects
  nothing, so the unlock scripts delete the list when the field's count reaches 0 and the
  force-release scripts when they delete the hash (`forgetAttempts`); otherwise it expires with
  the longest TTL the lock had right after one of its attempts: a copy comes only once ioredis
  has reconnected, however long the outage lasted, and the hold it would count again lives that
  long unless this client renews it, over that same connection, behind the copy. A copy that
  comes later, or after the holds it belonged to ended, is not in the list (or finds no hold)
  and takes the lock afresh, as its first sending would have; the engine gives back a grant it
  no longer waits for.

  `repeatedAttempt(latches, attempt, lock, field)`: the fence this attempt answered when it was
  applied before and `field` still counts holds in `lock` (a copy: it answers the hold as it
  stands), else nil.
  `recordAttempt(latches, attempt, fence, holds, ttl)`: once the steps that can fail are behind,
  before the first write, so that a failing attempt writes nothing; `holds` is the field's
  count and `ttl` the lock's TTL once the attempt is applied.
  `forgetAttempts(lock, prefix)`: deletes the lists of every field of `lock`, `prefix` being
  redisson_lock_attempt:{name}.
]]
local function repeatedAttempt(latches, attempt, lock, field)
  if not latches or redis.call('hexists', lock, field) == 0 then
    return nil
  end
  for _, entry in ipairs(redis.call('lrange', latches, 0, -1)) do
    local fence, id = string.match(entry, '^(%d+):(.*)$')
    if id == attempt then
      return tonumber(fence)
    end
  end
  return nil
end

local function recordAttempt(latches, attempt, fence, holds, ttl)
  if latches then
    redis.call('lpush', latches, string.format('%d:%s', fence, attempt))
    redis.call('ltrim', latches, 0, holds - 1)
    redis.call('pexpire', latches, math.max(redis.call('pttl', latches), ttl))
  end
end

local function forgetAttempts(lock, prefix)
  for _, field in ipairs(redis.call('hkeys', lock)) do
    redis.call('del', prefix .. ':' .. field)
  end
end
