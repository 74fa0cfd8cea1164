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
  fair lock also keeps a marker naming no attempt for a turn it keeps, and one for a kept turn
  given up: see fair/turn.lua).

  How many it keeps: a copy can only be of an attempt whose reply the client has not read yet.
  ioredis resends on the one connection, in order and ahead of anything sent after the reset,
  and Redis answers in the order it applied, so those attempts are the newest applied ones. Each
  counted a hold that is still counted: a hold is given back only after a reply was read (an
  unlock of a handle, the engine undoing a late grant). So they are never more than the field's
  holds, and the list is cut to them at every attempt. A latch outliving its holds protects
  nothing, so the unlock scripts delete the list when the field's count reaches 0 and the
  force-release scripts when they delete the hash (`forgetAttempts`); otherwise it expires with
  the lock: it gets the longest TTL the lock had right after one of its attempts, and every
  script that lengthens the lock for its field (a renewal, a partial unlock, the writer's own
  read acquisition) lengthens it too (`keepAttempts`). A copy comes only once ioredis has
  reconnected, however long the outage lasted, and the hold it would count again lives as long
  as the lock: a renewal sent behind the attempt, both unanswered when the connection reset,
  lands before the copy, and a list it did not lengthen would expire first, the copy then
  finding the field still counting and counting it again. A copy that comes later, or after
  the holds it belonged to ended, is not in the list (or finds no hold) and takes the lock
  afresh, as its first sending would have; the engine gives back a grant it no longer waits for.

  `appliedAttempt(latches, ...)`: the latch of the newest applied attempt whose id is one of
  the ids given, and which of them (1, 2, ...), else nil. A marker names no attempt (engine
  attempt ids never start with ":"), so it is never found. The undo scripts find the attempt
  they give back with it.
  `repeatedAttempt(latches, attempt, lock, field)`: the fence this attempt answered when it was
  applied before and `field` still counts holds in `lock` (a copy: it answers the hold as it
  stands), else nil.
  `recordAttempt(latches, attempt, fence, holds, ttl)`: once the steps that can fail are behind,
  before the first write, so that a failing attempt writes nothing; `holds` is the field's
  count and `ttl` the lock's TTL once the attempt is applied. A latch naming no attempt (a fair
  lock's kept turn, "<fence>::<end>", or a given-up turn's "::wake", always the list's last:
  fair/turn.lua) stays out of the cut, which keeps beside it the newest holds - 1 attempts for a
  kept turn (it stands for a hold no attempt in the list counted), the newest holds for a given-up
  one (it stands for none): entries of holds given back since (an unlock takes none out) would
  otherwise push it out, the kept grant then counted as an ordinary hold, the given-up turn's
  waiters then left unwoken. A first hold drops it: it is of an earlier life of the lock.
  The acquire scripts also get @lock/core's expiry-guard.lua, prefixed first: `mayExpire(...)`
  asks, before any write, whether this user may PEXPIRE the lock hash and the latch lists, and
  they refuse with EXPIRY_REFUSED otherwise (a user allowed HINCRBY or LPUSH but not PEXPIRE
  would leave them without a TTL, held by nobody).
  `keepAttempts(latches, ttl)`: the list, when there is one, lives at least `ttl` ms more.
  `forgetAttempt(latches, attempt, ...)`: a partial unlock takes out the latch of the attempt
  that took the hold it gives back (the engine passes its id; '' when unknown), under that id or
  one of the other forms given (the fair lock's "!" form). The cut keeps as many
  latches as the field has holds: latches of holds given back would otherwise push out those of
  holds still counted, whose undo (a hold the engine lost to a master change) must find them.
  `forgetAttempts(lock, prefix)`: deletes the lists of every field of `lock`, `prefix` being
  redisson_lock_attempt:{name}.
]]
local function appliedAttempt(latches, ...)
  for _, entry in ipairs(redis.call('lrange', latches, 0, -1)) do
    local id = string.match(entry, '^%d+:(.*)$')
    for i = 1, select('#', ...) do
      if id == select(i, ...) then
        return entry, i
      end
    end
  end
  return nil
end

local function repeatedAttempt(latches, attempt, lock, field)
  if not latches or redis.call('hexists', lock, field) == 0 then
    return nil
  end
  local entry = appliedAttempt(latches, attempt)
  return entry and tonumber(string.match(entry, '^(%d+):'))
end

local function keepAttempts(latches, ttl)
  local left = redis.call('pttl', latches)
  if left ~= -2 and left < ttl then
    redis.call('pexpire', latches, ttl)
  end
end

local function recordAttempt(latches, attempt, fence, holds, ttl)
  if not latches then
    return
  end
  local oldest = redis.call('lindex', latches, -1)
  local marker = oldest and holds > 1 and string.match(oldest, '^(%d*)::')
  -- A marker is taken off only after the push: emptied, the list would come back without a TTL.
  redis.call('lpush', latches, string.format('%d:%s', fence, attempt))
  if marker then
    local beside = marker == '' and holds or holds - 1
    redis.call('rpop', latches)
    redis.call('ltrim', latches, 0, beside - 1)
    redis.call('rpush', latches, oldest)
  else
    redis.call('ltrim', latches, 0, holds - 1)
  end
  keepAttempts(latches, ttl)
end

local function forgetAttempts(lock, prefix)
  for _, field in ipairs(redis.call('hkeys', lock)) do
    redis.call('del', prefix .. ':' .. field)
  end
end

local function forgetAttempt(latches, attempt, ...)
  local entry = attempt ~= '' and appliedAttempt(latches, attempt, ...)
  if entry then
    redis.call('lrem', latches, 1, entry)
  end
end
