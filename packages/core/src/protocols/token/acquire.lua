--[[
  Takes a token lock, or re-enters it for the same owner, in one step.

  Input:
    KEYS[1] lock key: a hash of the owner's hold count (field = owner) and the hold's fence (field '')
    KEYS[2] fence counter shared by the locks of a namespace (and slot): never expires
    KEYS[3] the per-key counter of earlier versions: migrated into KEYS[2] and deleted when found
    ARGV[1] owner
    ARGV[2] ttl in ms
    ARGV[3] '1' when the owner is fresh (made for this acquire call alone): a hold of it can
            only be this call's own earlier attempt, so it is answered as it stands, not counted

  Output:
    { 1, fence, holds, pttl }  acquired (holds = 1) or re-entered (holds > 1, fence unchanged);
                               pttl is the lock's TTL now (a re-entry never shortens it)
    { 0, pttl }                held by another owner; pttl = its remaining ms (-1 if it has no TTL)
]]
local rcall = redis.call
local lock, counter, oldCounter = KEYS[1], KEYS[2], KEYS[3]
local owner, ttl, fresh = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1'

if rcall('exists', lock) == 0 then
  local old = rcall('get', oldCounter)
  if old then
    if tonumber(rcall('get', counter) or '0') < tonumber(old) then
      rcall('set', counter, old)
    end
    rcall('del', oldCounter)
  end
  -- The fence first: if the counter cannot be incremented, nothing has been written.
  local fence = rcall('incr', counter)
  rcall('hset', lock, owner, 1, '', fence)
  rcall('pexpire', lock, ttl)
  return { 1, fence, 1, ttl }
end

if rcall('hexists', lock, owner) == 1 then
  local holds = tonumber(rcall('hget', lock, owner))
  if not fresh then
    holds = rcall('hincrby', lock, owner, 1)
  end
  local pttl = rcall('pttl', lock)
  if pttl < ttl then
    rcall('pexpire', lock, ttl)
    pttl = ttl
  end
  -- A hold taken by an earlier version keeps its fence in the per-key counter.
  local fence = rcall('hget', lock, '') or rcall('get', oldCounter) or '0'
  return { 1, tonumber(fence), holds, pttl }
end

return { 0, rcall('pttl', lock) }
