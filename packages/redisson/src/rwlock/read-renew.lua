--[[
  Watchdog renewal of a reader (Redisson's ReadLockTask, one reader per call): every timeout
  key of its holds and its fence key get the lease again, only while its count field exists.
  The hash gets the lease too, but is never shortened: other readers may have been promised
  longer fixed leases (Redisson's script would cut them short). The reader's attempt latches
  live as long as the hash (attempt.lua, prefixed to this script).

  KEYS[1] lock hash
  KEYS[2] this reader's timeout key prefix {name}:<owner>:rwlock_timeout
  KEYS[3] this reader's fence key {name}:<owner>:rwlock_fence
  KEYS[4] this reader's attempt latches redisson_lock_attempt:{name}:<owner>
  ARGV[1] lease in ms
  ARGV[2] owner field

  Returns the reader's hold count when renewed, 0 when it holds nothing.
]]
local holds = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
if not holds then
  return 0
end
for n = holds, 1, -1 do
  redis.call('pexpire', KEYS[2] .. ':' .. n, ARGV[1])
end
redis.call('pexpire', KEYS[3], ARGV[1])
local ttl = math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1]))
redis.call('pexpire', KEYS[1], ttl)
keepAttempts(KEYS[4], ttl)
return holds
