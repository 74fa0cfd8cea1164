--[[
  Prefixed to the fair-lock scripts that meet a kept turn (undo.lua keeps one): a grant the
  engine gave back because its reply came too late, left held for the owner's next attempt
  rather than freed for the next waiter. Its latch in the owner's attempt list (attempt.lua) is
  then "<fence>:", naming no attempt, so that no copy of an attempt is ever answered from it.

  `keptTurn(latches)`: the fence of the owner's kept grant, else nil.
]]
local function keptTurn(latches)
  for _, entry in ipairs(redis.call('lrange', latches, 0, -1)) do
    local fence = string.match(entry, '^(%d+):$')
    if fence then
      return tonumber(fence)
    end
  end
  return nil
end
