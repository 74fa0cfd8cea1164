--[[
  Gives up one hold of a token lock; the last hold deletes it and announces the release.

  Input:
    KEYS[1] lock key
    ARGV[1] owner
    ARGV[2] publish command: PUBLISH, or SPUBLISH on a cluster
    ARGV[3] release channel (same slot as KEYS[1])

  Output:
    0   released (key deleted, message published)
    n   still held by the owner with n holds left
    -1  not held by this owner: nothing changed
]]
local rcall = redis.call
local lock, owner = KEYS[1], ARGV[1]

if rcall('hexists', lock, owner) == 0 then
  return -1
end

local holds = rcall('hincrby', lock, owner, -1)
if holds > 0 then
  return holds
end

rcall('del', lock)
rcall(ARGV[2], ARGV[3], 'released')
return 0
