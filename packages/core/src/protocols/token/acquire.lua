--[[
  Takes a token lock, or re-enters it for the same owner, in one step.

  Input:
    KEYS[1] lock key: a hash of the owner's hold count (field = owner), the hold's fence (field
            '') and the ids of the last attempts applied for the owner (field NUL + owner, see
            recent-ids.lua, prefixed to this script)
    KEYS[2] fence counter shared by the locks of a namespace (and slot): never expires; the
            script that creates it also writes its epoch stamp, KEYS[2] .. ":epoch" (same slot;
            nextFence comes from next-fence.lua, prefixed to this script)
    KEYS[3] the per-key counter of earlier versions: migrated into KEYS[2] and deleted when found
    KEYS[4] waiter queue: a sorted set of waiting owners by arrival (server ms, a thousandth of a
            ms apart within one ms)
    KEYS[5] waiter registrations: a hash owner -> server ms until which it counts as waiting,
            NUL + owner -> the lease of a direct grant (ARGV[5]) and STX + owner -> its inbox
            (ARGV[7])
    ARGV[1] owner
    ARGV[2] ttl in ms
    ARGV[3] flags, a number: 1 when the owner is fresh (made for this acquire call alone: a hold
            of it can only be this call's own earlier attempt, so it is answered as it stands,
            not counted), plus 2 when an earlier attempt of this call was refused (it may be
            queued: a grant takes it out of the queue)
    ARGV[4] optional: registration lease in ms: when refused, the owner is queued (or its
            registration renewed) for that long; absent or 0 when the call will not wait
    ARGV[5] optional: lease in ms of a direct grant by a release (see hand-on.lua), registered
            with the owner when it is queued; absent or 0 for none (the release then only
            names it)
    ARGV[6] optional: attempt id: a copy of an attempt already applied (resent by the client
            after a reconnect) is answered as it stands, not counted again; absent or '' for a
            fresh owner, which needs none
    ARGV[7] optional: the channel (the inbox of the caller's subscriber) on which a release tells
            the owner, once queued, that it is next (see hand-on.lua); absent for the lock's
            channel. Only a caller that may wait sends it, and only on plain pub/sub
  Trailing arguments are left out when they say nothing: each one costs every acquisition.

  Output:
    { 1, fence, holds, pttl }  acquired (holds = 1); pttl is the lock's TTL now
    { 1, fence, holds, pttl, counter }
                               the owner held it already: re-entered (holds > 1, fence
                               unchanged, pttl never shortened), or a fresh owner's earlier
                               attempt answered as it stands; counter = the fence counter now
                               (0 if none), which a first acquisition here would draw above:
                               RedLock draws above it a re-entry that no majority re-entered
    { 0, pttl, now }           held by another owner; pttl = its remaining ms (-1 if it has no TTL);
                               now = the server's time in ms when the owner was queued (absent
                               when it was not), against which a direct grant's time is read
    error NOPERM               the ACL refuses this user PEXPIRE on the lock (see
                               expiry-guard.lua); nothing was written
]]
local rcall = redis.call
local lock, counter, oldCounter, queue, registrations = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local owner, ttl, flags = ARGV[1], tonumber(ARGV[2]), ARGV[3]
-- Flags compared as text: each tonumber is a strtod, and this script runs for every lock.
local fresh, queued = flags == '1' or flags == '3', flags == '2' or flags == '3'
local grantLease, attempt, inbox = ARGV[5] or '0', ARGV[6] or '', ARGV[7]
local attemptField = '\0' .. owner

local function dequeue()
  if queued then
    rcall('zrem', queue, owner)
    rcall('hdel', registrations, owner, '\0' .. owner, '\2' .. owner)
  end
end

-- The lock is created below before it gets its TTL (the queue keys too: checked there).
if not mayExpire(lock) then
  return redis.error_reply(EXPIRY_REFUSED)
end

-- -2 when free; otherwise the holder's remaining ms, which every answer below reports.
local pttl = rcall('pttl', lock)
if pttl == -2 then
  local fence = nextFence(counter, oldCounter)
  -- Numbers go to Redis as text made here, or as sent: Redis writes a Lua number with a float
  -- printf, which cost an uncontended acquire+release about 5 % of its server time.
  local fenceText = string.format('%d', fence)
  -- A fresh owner's resent attempt is recognised without its id (ARGV[3]'s flag): nothing to record.
  if fresh then
    rcall('hset', lock, owner, '1', '', fenceText)
  else
    rcall('hset', lock, owner, '1', '', fenceText, attemptField, attempt)
  end
  rcall('pexpire', lock, ARGV[2])
  dequeue()
  return { 1, fence, 1, ttl }
end

local held = rcall('hget', lock, owner)
if held then
  local holds = tonumber(held)
  if not fresh then
    -- A copy of an attempt applied here (resent by the client) counts no second hold.
    local applied = attempt ~= '' and rcall('hget', lock, attemptField)
    if not idsHave(applied, attempt) then
      holds = rcall('hincrby', lock, owner, 1)
      if attempt ~= '' then
        rcall('hset', lock, attemptField, idsWith(applied, attempt))
      end
    end
  end
  if pttl < ttl then
    rcall('pexpire', lock, ARGV[2])
    pttl = ttl
  end
  -- A hold taken by an earlier version keeps its fence in the per-key counter.
  local fence = rcall('hget', lock, '') or rcall('get', oldCounter) or '0'
  dequeue()
  return { 1, tonumber(fence), holds, pttl, tonumber(rcall('get', counter) or '0') }
end

-- Refused: a caller that will wait joins the queue (first registration fixes its place), so the
-- release can hand the lock to that one waiter, or name it, in whichever process it waits.
local lease = tonumber(ARGV[4] or '0')
if lease > 0 then
  if not mayExpire(queue, registrations) then
    return redis.error_reply(EXPIRY_REFUSED)
  end
  local time = rcall('time')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  -- Owners that tie on a score are ordered by name, not arrival: one registered in the same ms
  -- as the last in line goes a thousandth of a ms after it.
  local last = rcall('zrange', queue, -1, -1, 'WITHSCORES')[2]
  local place = now
  if last and tonumber(last) >= now then
    place = tonumber(last) + 0.001
  end
  rcall('zadd', queue, 'NX', place, owner)
  -- Each registration says anew what the release may do for it: terms and inbox not sent now go.
  local fields, dropped = { owner, string.format('%d', now + lease) }, {}
  if grantLease ~= '0' then
    fields[#fields + 1], fields[#fields + 2] = '\0' .. owner, grantLease
  else
    dropped[#dropped + 1] = '\0' .. owner
  end
  if inbox then
    fields[#fields + 1], fields[#fields + 2] = '\2' .. owner, inbox
  else
    dropped[#dropped + 1] = '\2' .. owner
  end
  rcall('hset', registrations, unpack(fields))
  if #dropped > 0 then
    rcall('hdel', registrations, unpack(dropped))
  end
  for _, key in ipairs({ queue, registrations }) do
    if rcall('pttl', key) < lease then
      rcall('pexpire', key, ARGV[4])
    end
  end
  return { 0, pttl, now }
end

return { 0, pttl }
