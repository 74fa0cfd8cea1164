--[[
  Prefixed to the acquire scripts that increment a fence counter: a counter an increment has
  just created is stamped with its master at once (see fence-epoch.lua), so a failover before
  any client stamped it still raises it on the promoted replica. A user the ACL denies the
  stamp locks without it (the backend warns).
]]
local function stampNewCounter(counter)
  local info = redis.pcall('info', 'server')
  if type(info) == 'string' then
    redis.pcall('set', counter .. ':epoch', string.match(info, 'run_id:(%x+)'))
  end
end

