--[[
  Prefixed to the release scripts of the formats that count re-entrant holds (token, legacy).
  A release that takes off one of several holds records its id, so that the same release sent
  again is answered as it stands instead of taking off a second hold: ioredis resends commands
  left unanswered by a reconnect, and a caller retries a release whose answer it never got. A
  second decrement would free the lock under a handle that still counts on it.

  `releaseApplied(ids, id)`: whether release `id` is among `ids` (the recorded field, or false).
  `releaseIdsWith(ids, id)`: the field's new value, the last RECENT_RELEASES ids with `id` last:
  handles of one hold release in any order, so a retry may come after others' releases.
]]
local RECENT_RELEASES = 8

local function releaseApplied(ids, id)
  return id ~= '' and ids ~= false and string.find(' ' .. ids .. ' ', ' ' .. id .. ' ', 1, true) ~= nil
end

local function releaseIdsWith(ids, id)
  local kept = {}
  if ids then
    for seen in string.gmatch(ids, '%S+') do
      kept[#kept + 1] = seen
    end
  end
  kept[#kept + 1] = id
  if #kept > RECENT_RELEASES then
    table.remove(kept, 1)
  end
  return table.concat(kept, ' ')
end
