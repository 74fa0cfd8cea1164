--[[
  Prefixed to the legacy scripts that keep the owner record: `expireWith(record, lock, leaseMs)`
  gives the record the lock key's expiry, and `describes(record, lock, pttl)` tells whether the
  record still describes the lock key (whose PTTL is `pttl`); `ownedBy(record, lock, owner)`
  whether the lock key is a legacy lock that `owner` holds: its record names the owner and
  describes the key as it is now (value and expiry).

  The record is written with the key, in the same script, to expire at the same instant, so the
  two expire together for as long as they belong together. A record that outlived its key
  (deleted by a legacy peer whose clock runs ahead) must not vouch for the key a peer wrote since,
  even one holding the same timestamp (written in the same second): that key's expiry is its own.
  Each command of a script reads the clock, Redis 7.0's included, so two relative TTLs set in one
  script differ by however long the server was held between them (preempted on a loaded host):
  Redis 7 tells the expiry itself (PEXPIRETIME), which is copied; it is compared with one ms of
  tolerance, as records written by earlier versions may be that far off. Before Redis 7 (or for
  a user the ACL refuses PEXPIRETIME) both keys are given one expiry, from one reading of TIME,
  and two PTTLs read one after the other tell it apart from the key's by more than the time
  between the two reads.

  `leaseLeft(record, owner)` answers the ms left of another owner's lease whose key a peer broke
  (see below), or nil.

  `foreignRecord(record)` tells whether something not ours sits at the record's key (another
  lock, e.g. a Redisson hash or a PHP string of that name, or other data): the scripts then
  refuse before any write, as writing into it, or deleting it, would break whoever owns it.
]]
local function expiryOf(key)
  local at = redis.pcall('pexpiretime', key)
  if type(at) == 'number' then
    return at
  end
  return nil
end

local function serverMs()
  local time = redis.call('time')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

local function expireWith(record, lock, leaseMs)
  -- First, so that the record expires even for a user the ACL refuses PEXPIREAT.
  redis.call('pexpire', record, leaseMs)
  local at = expiryOf(lock)
  if not at then
    -- The key's lease then starts when this runs, not at its SET: later by the few ms a held
    -- server took in between, which the caller's validity, counted from before it sent the
    -- script, never relied on.
    at = serverMs() + leaseMs
    redis.pcall('pexpireat', lock, at)
  end
  redis.pcall('pexpireat', record, at)
end

local function describes(record, lock, pttl)
  if pttl < 0 then
    return false
  end
  local at = expiryOf(lock)
  if at then
    return math.abs(expiryOf(record) - at) <= 1
  end
  -- The record's PTTL, read after the key's, falls short of it by the time between the two
  -- reads when both expire at one ms; a ms either way for the reads' rounding.
  local before = serverMs()
  local left = redis.call('pttl', lock)
  local gap = left - redis.call('pttl', record)
  return left >= 0 and gap >= -1 and gap <= serverMs() - before + 1
end

-- The record, not the timestamp the caller last saw, says whose the key is: the owner's own
-- renewal may have rewritten the timestamp in a reply the caller never got (it came too late),
-- while any other writer leaves a key whose value or expiry the record no longer describes.
local function ownedBy(record, lock, owner)
  -- Another type under the name means our string is long gone; GET would raise WRONGTYPE.
  if redis.call('type', lock).ok ~= 'string' then
    return false
  end
  -- Nor is a record of another type ours; HMGET would raise WRONGTYPE and fail the whole batch.
  local mine = redis.pcall('hmget', record, 'owner', 'value')
  if mine.err then
    if string.sub(mine.err, 1, 9) ~= 'WRONGTYPE' then
      error(mine)
    end
    return false
  end
  return mine[1] == owner and mine[2] == redis.call('get', lock)
    and describes(record, lock, redis.call('pttl', lock))
end

-- A peer may delete our key or write over it (a stalled holder's check-then-DEL, a GETSET loser's
-- write, which drops the TTL) while the owner we granted it to holds it by the lease it was told:
-- the record, which outlives the key, keeps our other owners out until that lease ends. The peers
-- themselves are not kept out: they never read it.
local function leaseLeft(record, owner)
  local left = redis.call('pttl', record)
  if left > 0 and redis.call('hmget', record, 'owner')[1] ~= owner then
    return left
  end
  return nil
end

-- Every field the legacy scripts write into an owner record; a hash with any other is not ours.
local RECORD_FIELDS = { 'owner', 'holds', 'value', 'fence', 'attempt', 'releases' }

local function foreignRecord(record)
  local kind = redis.call('type', record).ok
  if kind == 'none' then
    return false
  end
  if kind ~= 'hash' then
    return true
  end
  local fields = redis.call('hmget', record, unpack(RECORD_FIELDS))
  local ours = 0
  for i = 1, #RECORD_FIELDS do
    if fields[i] then
      ours = ours + 1
    end
  end
  local size = redis.pcall('hlen', record)
  if type(size) == 'number' then
    return size ~= ours
  end
  -- A user the ACL denies HLEN: every record we write names its owner and value, which no
  -- hash of another format does (a Redisson lock's fields are `<uuid>:<thread>`).
  return not (fields[1] and fields[3])
end
