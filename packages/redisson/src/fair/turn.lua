--[[
  Prefixed to the scripts that meet a kept turn (undo.lua keeps one): a grant the engine gave
  back because its reply came too late, left held for the owner's next attempt rather than freed
  for the next waiter. Its latch in the owner's attempt list (attempt.lua) is then the marker
  "<fence>::<deadline>", naming no attempt (engine attempt ids never start with ":"), so that no
  copy of an attempt is ever answered from it. The deadline is when the kept grant ends, in the
  server's clock (ms): holds the same thread takes meanwhile through an RLock handle lengthen the
  lock, and once they are unlocked the kept grant alone goes back to it.

  `turnMarker(fence, ttl)`: the marker of a grant kept for `ttl` ms from now.
  `keptTurn(latches)`: the fence of the owner's kept grant, its deadline and its marker, else nil.
  `keptTurnLeft(latches, holds)`: after a partial unlock left the owner `holds` holds, the ms its
  kept grant has left (at least 1) when the one hold left is that grant, else nil.

  A kept turn given up while the thread holds the lock besides (give-up.lua) leaves those holds
  as a plain RLock's, whose unlock wakes no fair waiter: Java's fair waiters listen on their own
  channels only, and would poll again only at the end of the TTL they last read (the RLock
  hold's, up to its 30 s lease). So its marker is replaced by WAKE_FAIR_QUEUE, which stands for
  no hold and names no attempt, for the unlock that frees the lock to wake the head of the fair
  queue too (lock/release.lua).
  `wakesFairQueue(latches)`: whether the owner's list holds that marker.
]]
local function serverMs()
  local time = redis.call('time')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

local function turnMarker(fence, ttl)
  return string.format('%d::%d', fence, serverMs() + ttl)
end

local function keptTurn(latches)
  for _, entry in ipairs(redis.call('lrange', latches, 0, -1)) do
    local fence, deadline = string.match(entry, '^(%d+)::(%d+)$')
    if fence then
      return tonumber(fence), tonumber(deadline), entry
    end
  end
  return nil
end

local WAKE_FAIR_QUEUE = '::wake'

local function wakesFairQueue(latches)
  for _, entry in ipairs(redis.call('lrange', latches, 0, -1)) do
    if entry == WAKE_FAIR_QUEUE then
      return true
    end
  end
  return false
end

local function keptTurnLeft(latches, holds)
  if holds ~= 1 then
    return nil
  end
  local _, deadline = keptTurn(latches)
  return deadline and math.max(1, deadline - serverMs())
end
