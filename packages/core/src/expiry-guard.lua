--[[
  Prefixed to the scripts that create a key and then give it a TTL (a token lock hash, the
  waiter queue and its registrations, a legacy owner record): Redis keeps what a script wrote
  before a command the ACL refuses, so a user allowed HSET but not PEXPIRE would leave a key
  that never expires, a lock held by nobody. `mayExpire(...)` asks the ACL up front (Redis 7's
  redis.acl_check_cmd) whether the user may PEXPIRE every key given (nil ones skipped), so the
  script can refuse before its first write. Redis 6 has no such check: there, the README's
  command list must be granted whole. Also prefixed to @lock/redisson's acquire scripts.
]]
local function mayExpire(...)
  if not redis.acl_check_cmd then
    return true
  end
  for i = 1, select('#', ...) do
    local key = select(i, ...)
    if key and not redis.acl_check_cmd('pexpire', key, '1') then
      return false
    end
  end
  return true
end

local EXPIRY_REFUSED =
  'NOPERM this user may not run PEXPIRE on the lock keys, which every lock needs; nothing was written'
