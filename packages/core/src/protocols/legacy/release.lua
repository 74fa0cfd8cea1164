--[[
  Gives up one hold of a legacy timestamp lock while the key still holds the exact timestamp
  we wrote and the owner record names us as its writer; the last hold deletes it and announces
  the release. A lock that expired, was taken over or was rewritten by anyone else is left
  alone, also when another owner happened to write the same timestamp (same second), and when a
  legacy peer deleted ours and wrote its own (the record no longer describes the key: see
  owner-record.lua).

  Input:
    KEYS[1] lock key
    KEYS[2] owner record (hash { owner, holds, value, releases })
    ARGV[1] the timestamp we wrote (our token)
    ARGV[2] owner
    ARGV[3] publish command: PUBLISH, or SPUBLISH on a cluster
    ARGV[4] release channel (same slot as KEYS[1])
    ARGV[5] release id, recorded (field releases) when it takes off one of several holds, so that
            it is applied once however often it is sent (see recent-ids.lua); '' for none

  Output:
    0   released (keys deleted, message published)
    n   still held by the owner with n holds left
    -1  not ours: nothing changed
]]
local rcall = redis.call
local lock, record, token, owner, id = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[5]

-- Another type under the name means our string is long gone; GET would raise WRONGTYPE.
if rcall('type', lock).ok ~= 'string' or rcall('get', lock) ~= token then
  return -1
end

local mine = rcall('hmget', record, 'owner', 'holds', 'value', 'releases')
if mine[1] ~= owner or mine[3] ~= token or not describes(record, lock, rcall('pttl', lock)) then
  return -1
end
if idsHave(mine[4], id) then
  return tonumber(mine[2])
end
if tonumber(mine[2]) > 1 then
  if id ~= '' then
    rcall('hset', record, 'releases', idsWith(mine[4], id))
  end
  return rcall('hincrby', record, 'holds', -1)
end

rcall('del', lock, record)
rcall(ARGV[3], ARGV[4], 'released')
return 0
