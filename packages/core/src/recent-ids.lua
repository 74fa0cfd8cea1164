--[[
  Prefixed to the scripts of the formats that count re-entrant holds (token, legacy) that must
  recognise a command sent again: ioredis resends commands left unanswered by a reconnect, and
  a caller retries one whose answer it never got. Each keeps the ids of its last RECENT_IDS
  commands in a hash field, space-separated.

  - Releases: one that takes off one of several holds records its id, so that the same release
    sent again is answered as it stands instead of taking off a second hold (which would free
    the lock under a handle that still counts on it). Handles of one hold release in any order,
    so a retry may come after others' releases.
  - Acquire attempts (token format, an owner that is not fresh): one that counts a hold records
    its id, so that a copy counts none, and the undo of that attempt knows it was applied here,
    also when concurrent attempts of the owner were applied after it.

  `idsHave(ids, id)`: whether `id` is among `ids` (the recorded field, or false).
  `idsWith(ids, id)`: the field's new value, the last RECENT_IDS ids with `id` last.
]]
local RECENT_IDS = 8

local function idsHave(ids, id)
  return id ~= '' and ids ~= false and string.find(' ' .. ids .. ' ', ' ' .. id .. ' ', 1, true) ~= nil
end

local function idsWith(ids, id)
  local kept = {}
  if ids then
    for seen in string.gmatch(ids, '%S+') do
      kept[#kept + 1] = seen
    end
  end
  kept[#kept + 1] = id
  if #kept > RECENT_IDS then
    table.remove(kept, 1)
  end
  return table.concat(kept, ' ')
end
