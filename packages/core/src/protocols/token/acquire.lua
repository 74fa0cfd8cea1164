--[[
  Takes a token lock, or re-enters it for the same owner, in one step.

  Input:
    KEYS[1] lock key: a hash whose single field is the owner, valued by its hold count
    KEYS[2] fence counter: a plain integer that never expires
    ARGV[1] owner
    ARGV[2] ttl in ms

  Output:
    { 1, fence, holds }  acquired (holds = 1) or re-entered (holds > 1, fence unchanged)
    { 0, pttl }          held by another owner; pttl = its remaining ms (-1 if it has no TTL)
]]
local rcall = redis.call
local lock, counter = KEYS[1], KEYS[2]
local owner, ttl = ARGV[1], tonumber(ARGV[2])

if rcall('exists', lock) == 0 then
  rcall('hset', lock, owner, 1)
  rcall('pexpire', lock, ttl)
  return { 1, rcall('incr', counter), 1 }
end

if rcall('hexists', lock, owner) == 1 then
  local holds = rcall('hincrby', lock, owner, 1)
  if rcall('pttl', lock) < ttl then
    rcall('pexpire', lock, ttl)
  end
  return { 1, tonumber(rcall('get', counter) or '0'), holds }
end

return { 0, rcall('pttl', lock) }
