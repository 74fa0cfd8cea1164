--[[
  Takes a token lock, or re-enters it for the same owner, in one step.

  Input:
    KEYS[1] lock key: a hash whose single field is the owner, valued by its hold count
    KEYS[2] fence counter: a plain integer that never expires
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
local lock, counter = KEYS[1], KEYS[2]
local owner, ttl, fresh = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1'

if rcall('exists', lock) == 0 then
  -- The fence first: if the counter cannot be incremented, nothing has been written.
  local fence = rcall('incr', counter)
  rcall('hset', lock, owner, 1)
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
  return { 1, tonumber(rcall('get', counter) or '0'), holds, pttl }
end

return { 0, rcall('pttl', lock) }
