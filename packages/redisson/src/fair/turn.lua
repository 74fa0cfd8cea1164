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

local function keptTurnLeft(latches, holds)
  if holds ~= 1 then
    return nil
  end
  local _, deadline = keptTurn(latches)
  return deadline and math.max(1, deadline - serverMs())
end
