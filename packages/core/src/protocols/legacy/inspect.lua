--[[
  Reads a legacy timestamp lock without changing it.

  Input:
    KEYS[1] lock key
    KEYS[2] the per-key counter of earlier versions (holds they took keep their fence there)
    KEYS[3] owner record (hash { owner, holds, value, fence, attempt, releases })
    ARGV[1] ms per unit of the stored timestamp: 1000 for seconds, 1 for milliseconds
    ARGV[2] skew margin in ms (as for acquire)

  Output:
    { holds, pttl, fence, owner }
      holds  0 free (absent, or TTL-less and stale past the margin: the next acquire takes it
             over); else the owner's hold count, 1 for a lock written by a legacy fleet
      pttl   PTTL of the lock key (-1 without a TTL, -2 when absent), or of the owner record when
             a peer deleted the key or made it stale under an owner of ours (see leaseLeft)
      fence  the holder's fence, -1 when free or written by a legacy fleet (which has none)
      owner  our owner id, or '' for a lock written by a legacy fleet (or none)
    -1  the key holds another Redis type (a lock of another format)
    -2  the key's value is not a decimal timestamp
    -4  the key's value is a timestamp in the other unit (see inUnit)
    -3  something not ours sits at the owner record's key (see owner-record.lua)
]]
local rcall = redis.call
local lock = KEYS[1]
local scale, margin = tonumber(ARGV[1]), tonumber(ARGV[2])
local kind = rcall('type', lock).ok
if kind ~= 'none' and kind ~= 'string' then
  return -1
end
-- Whatever sits there, acquire refuses the name: so does inspect, rather than call it free.
if foreignRecord(KEYS[3]) then
  return -3
end

-- A key a peer deleted or made stale under an owner of ours is held until that owner's lease
-- ends, as acquire answers (see leaseLeft).
local function heldByRecord(free)
  local left = leaseLeft(KEYS[3], nil)
  if not left then
    return free
  end
  local mine = rcall('hmget', KEYS[3], 'owner', 'holds', 'fence')
  return { tonumber(mine[2]), left, tonumber(mine[3] or rcall('get', KEYS[2]) or '-1'), mine[1] }
end

if kind == 'none' then
  return heldByRecord({ 0, -2, -1, '' })
end

local stored = rcall('get', lock)
local pttl = rcall('pttl', lock)
if not isTimestamp(stored, pttl) then
  return -2
end
if not inUnit(stored, scale) then
  return -4
end

if pttl < 0 then
  local time = rcall('time')
  local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  if tonumber(stored) * scale + margin <= nowMs then
    return heldByRecord({ 0, -1, -1, '' })
  end
end

local mine = rcall('hmget', KEYS[3], 'owner', 'holds', 'value', 'fence')
if mine[3] == stored and describes(KEYS[3], lock, pttl) then
  return { tonumber(mine[2]), pttl, tonumber(mine[4] or rcall('get', KEYS[2]) or '-1'), mine[1] }
end
return { 1, pttl, -1, '' }
