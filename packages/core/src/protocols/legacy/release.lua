--[[
  Gives up one hold of a legacy timestamp lock while the owner record names us and still
  describes the key (see ownedBy in owner-record.lua); the last hold deletes it and announces
  the release. A lock that expired, was taken over or was rewritten by anyone else is left
  alone, also when another owner happened to write the same timestamp (same second), and when a
  legacy peer deleted ours and wrote its own (the record no longer describes the key). The
  timestamp the caller holds is not asked for: a renewal of ours answered too late rewrote it
  without the caller learning the new one.

  Input:
    KEYS[1] lock key
    KEYS[2] owner record (hash { owner, holds, value, releases })
    ARGV[1] owner
    ARGV[2] publish command: PUBLISH, or SPUBLISH on a cluster
    ARGV[3] release channel (same slot as KEYS[1])
    ARGV[4] release id, recorded (field releases) when it takes off one of several holds, so that
            it is applied once however often it is sent (see recent-ids.lua); '' for none
    ARGV[5] acquire attempt id, for the undo of that attempt: a hold is taken off only if that
            attempt counted one here (field attempt, written by acquire.lua), so the undo of a grant
            whose lease ended never takes off a hold the owner took since; '' for a release of
            any hold

  Output:
    0   released (keys deleted, message published)
    n   still held by the owner with n holds left (untouched by an undo of an attempt not applied here)
    -1  not ours: nothing changed, but for the holds counted in our record of a key a peer broke
        (see leaseLeft)
]]
local rcall = redis.call
local lock, record, owner, id, attempt = KEYS[1], KEYS[2], ARGV[1], ARGV[4], ARGV[5]

-- A peer may have broken our lease (see leaseLeft): the key is then not ours to touch, but the
-- record, which keeps our other owners out until the lease ends, still counts the owner's holds
-- and goes with the last of them.
local owned = ownedBy(record, lock, owner)
-- pcall: a record of another type is not ours (ownedBy said so); its error table names no owner.
local mine = redis.pcall('hmget', record, 'owner', 'holds', 'releases', 'attempt')
if mine[1] ~= owner then
  return -1
end
local holds = tonumber(mine[2])
-- A copy of a release applied here, or the undo of an attempt that never counted a hold here.
if idsHave(mine[3], id) or (attempt ~= '' and not idsHave(mine[4], attempt)) then
  return owned and holds or -1
end
if holds > 1 then
  if id ~= '' then
    rcall('hset', record, 'releases', idsWith(mine[3], id))
  end
  local left = rcall('hincrby', record, 'holds', -1)
  return owned and left or -1
end
if not owned then
  rcall('del', record)
  return -1
end

rcall('del', lock, record)
rcall(ARGV[2], ARGV[3], 'released')
return 0
