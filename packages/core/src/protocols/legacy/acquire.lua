--[[
  Takes a legacy timestamp lock (the SETNX + GETSET format of the old Redis docs, JedisLock and
  the ThinkPHP class), or re-enters it for the same owner, writing exactly what those fleets
  read, with the server's clock and a TTL that ends when the value does (or, padded for peers
  whose clocks run ahead, before it).

  Input:
    KEYS[1] lock key: a plain string holding the holder's expiry as a decimal Unix timestamp
    KEYS[2] fence counter shared by the locks of a namespace (and slot), never expiring, named
            so no legacy fleet reads it; the script that creates it also writes its epoch
            stamp, KEYS[2] .. ":epoch" (same slot;
            nextFence comes from next-fence.lua, prefixed to this script)
    KEYS[3] owner record: a hash { owner, holds, value, fence, attempt, releases } with the
            lock's TTL, which legacy fleets never read; it counts re-entries of the owner that
            wrote `value`
    KEYS[4] the per-key counter of earlier versions: migrated into KEYS[2] and deleted when found
    ARGV[1] ms per unit of the stored timestamp: 1000 for seconds, 1 for milliseconds
    ARGV[2] lease in those units: the TTL
    ARGV[3] padding in those units: the stored timestamp is now + lease + padding, so that a
            peer whose clock runs that far ahead of the server reads it as past only after our
            validity (the ttl) has ended; the TTL, the lease, is what frees the key
    ARGV[4] skew margin in ms: how far past its timestamp a TTL-less key must be to be taken over
    ARGV[5] owner
    ARGV[6] '1' when the owner is fresh (made for this acquire call alone): a hold of it can
            only be this call's own earlier attempt, so it is answered as it stands, not counted
    ARGV[7] attempt id: a copy of an attempt already applied (resent by the client after a
            reconnect) is answered as it stands, not counted again; the record keeps the ids of
            the owner's last attempts that counted a hold (field attempt, see recent-ids.lua,
            prefixed to this script), so that the undo of one (release.lua) knows it was applied

  Output:
    { 1, fence, value, holds, pttl }  acquired (holds = 1) or re-entered (holds > 1, fence
                                unchanged); value is the timestamp now stored: the owner's
                                token; pttl the lock's TTL now (a re-entry never shortens it)
    { 0, remaining }            held by another owner: the key's remaining PTTL, or for a
                                TTL-less key the ms until it may be taken over (at most
                                MAX_WAIT: a timestamp centuries ahead must not overflow the reply),
                                or for a key a peer deleted or made stale under another owner of
                                ours, the ms left of that owner's lease (see leaseLeft)
    -1                          the key holds another Redis type (a lock of another format)
    -2                          the key's value is not a decimal timestamp
    -4                          the key's value is a timestamp in the other unit (see inUnit)
    -3                          something not ours sits at the owner record's key (see
                                owner-record.lua); nothing was written
    error NOPERM                the ACL refuses this user PEXPIRE on the record (see
                                expiry-guard.lua); nothing was written
]]
local rcall = redis.call
local lock, counter, record, oldCounter = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local scale, lease, padding = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local margin, owner, fresh, attempt = tonumber(ARGV[4]), ARGV[5], ARGV[6] == '1', ARGV[7]
-- The longest wait answered, in ms (2^31 - 1, as for ttls): a Lua number past 2^63 becomes a
-- negative integer reply.
local MAX_WAIT = 2147483647

-- Server time, so that no client clock decides who holds the lock.
local time = rcall('time')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local value = string.format('%d', math.floor(nowMs / scale) + lease + padding)
local leaseMs = lease * scale

-- `attempts`: the ids of the owner's last attempts that counted a hold here (see recent-ids.lua).
local function recordOwner(holds, fence, attempts)
  rcall('hset', record, 'owner', owner, 'holds', holds, 'value', value, 'fence', fence, 'attempt', attempts)
  expireWith(record, lock, leaseMs)
end

local kind = rcall('type', lock).ok
if kind ~= 'none' and kind ~= 'string' then
  return -1
end
-- Checked before the first write: every path below writes the record, and a takeover deletes it.
if foreignRecord(record) then
  return -3
end
if not mayExpire(record) then
  return redis.error_reply(EXPIRY_REFUSED)
end

if kind == 'none' then
  local left = leaseLeft(record, owner)
  if left then
    return { 0, left }
  end
  local fence = nextFence(counter, oldCounter)
  rcall('set', lock, value, 'PX', leaseMs)
  recordOwner(1, fence, attempt)
  return { 1, fence, value, 1, leaseMs }
end

local stored = rcall('get', lock)
local pttl = rcall('pttl', lock)
if not isTimestamp(stored, pttl) then
  return -2
end
if not inUnit(stored, scale) then
  return -4
end

local mine = rcall('hmget', record, 'owner', 'holds', 'value', 'fence', 'attempt')
if mine[1] == owner and mine[3] == stored and describes(record, lock, pttl) then
  local holds = tonumber(mine[2])
  local fence = tonumber(mine[4] or rcall('get', oldCounter) or '0')
  local attempts = mine[5] or ''
  -- A copy of an attempt applied here (resent by the client) counts no second hold.
  if not fresh and not idsHave(mine[5], attempt) then
    holds = holds + 1
    if attempt ~= '' then
      attempts = idsWith(mine[5], attempt)
    end
  end
  -- A re-entry never shortens the lease; lengthening it rewrites value and TTL together.
  if pttl < leaseMs then
    rcall('set', lock, value, 'PX', leaseMs)
    recordOwner(holds, fence, attempts)
    return { 1, fence, value, holds, leaseMs }
  end
  rcall('hset', record, 'holds', holds, 'attempt', attempts)
  return { 1, fence, stored, holds, pttl }
end

-- A key with a TTL is left to Redis to expire, whatever its timestamp says: taking it over is
-- how two holders appear when clocks disagree.
if pttl >= 0 then
  return { 0, pttl }
end

local wait = tonumber(stored) * scale + margin - nowMs
if wait > 0 then
  return { 0, math.min(math.ceil(wait), MAX_WAIT) }
end

local left = leaseLeft(record, owner)
if left then
  return { 0, left }
end
local fence = nextFence(counter, oldCounter)
rcall('del', record)
rcall('set', lock, value, 'PX', leaseMs)
recordOwner(1, fence, attempt)
return { 1, fence, value, 1, leaseMs }
