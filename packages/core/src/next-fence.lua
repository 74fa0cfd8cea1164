--[[
  Prefixed to the acquire scripts of the formats that draw fences from a shared counter (token,
  legacy): `nextFence(counter, oldCounter)` draws the next fence.

  - The fence comes first: if the counter cannot be incremented, nothing has been written.
  - A per-key counter left by an earlier version (`oldCounter`) is folded in and deleted, so
    fences never go backwards across the upgrade; a key of its name that is not such a counter
    (it has a TTL, or no number) is left alone.
  - A counter this call creates, by the increment or by folding in a per-key counter, is stamped
    with its master at once (see fence-epoch.lua), so a failover before any client stamped it
    still raises it on the promoted replica. A user the ACL denies the stamp locks without it
    (the backend warns).
]]
local function nextFence(counter, oldCounter)
  -- Whether the fold below creates the counter; read only there, off the common path.
  local folded = false
  local old = redis.call('get', oldCounter)
  -- Earlier versions' counters never expire and hold a number: a key of that name with a TTL is
  -- some peer's (a legacy lock named like it), not ours to fold in and delete.
  if old and tonumber(old) and redis.call('pttl', oldCounter) == -1 then
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

