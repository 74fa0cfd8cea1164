--[[
  Prefixed to the acquire scripts of the formats that draw fences from a shared counter (token,
  legacy): `nextFence(counter, oldCounter)` draws the next fence.

  - The fence comes first: if the counter cannot be incremented, nothing has been written.
  - A per-key counter left by an earlier version (`oldCounter`) is folded in and deleted, so
    fences never go backwards across the upgrade. A key of its name that is not such a counter
    is left alone: one of another type, one with a TTL, one holding anything but digits, and one
    at 1e9 or above (no earlier counter got there; every legacy timestamp, a peer's lock named
    like it that never expires, is past it).
  - A counter this call creates, by the increment or by folding in a per-key counter, is stamped
    with its master at once (see fence-epoch.lua), so a failover before any client stamped it
    still raises it on the promoted replica. A user the ACL denies the stamp locks without it
    (the backend warns).
]]
local function nextFence(counter, oldCounter)
  -- Whether the fold below creates the counter; read only there, off the common path.
  local folded = false
  -- pcall: a key of another type there answers an error, not a string, and is not ours.
  local old = redis.pcall('get', oldCounter)
  if
    type(old) == 'string'
    and string.match(old, '^%d+$')
    and tonumber(old) < 1e9
    and redis.call('pttl', oldCounter) == -1
  then
    local current = redis.call('get', counter)
    folded = not current
    if tonumber(current or '0') < tonumber(old) then
      redis.call('set', counter, old)
    end
    redis.call('del', oldCounter)
  end
  local fence = redis.call('incr', counter)
  if fence == 1 or folded then
    local info = redis.pcall('info', 'server')
    if type(info) == 'string' then
      redis.pcall('set', counter .. ':epoch', string.match(info, 'run_id:(%x+)'))
    end
  end
  return fence
end

