--[[
  Deletes a legacy timestamp lock only while it still holds the exact timestamp we wrote, and
  announces the release. A lock that expired, was taken over, or was rewritten is left alone.

  Input:
    KEYS[1] lock key
    ARGV[1] the timestamp we wrote (our token)
    ARGV[2] publish command: PUBLISH, or SPUBLISH on a cluster
    ARGV[3] release channel (same slot as KEYS[1])

  Output:
    1  released (key deleted, message published)
    0  not ours: nothing changed
]]
local rcall = redis.call
local lock = KEYS[1]

-- Another type under the name means our string is long gone; GET would raise WRONGTYPE.
if rcall('type', lock).ok ~= 'string' or rcall('get', lock) ~= ARGV[1] then
  return 0
end

rcall('del', lock)
rcall(ARGV[2], ARGV[3], 'released')
return 1
