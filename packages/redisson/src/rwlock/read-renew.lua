--[[
  Watchdog renewal of a reader (Redisson's ReadLockTask, one reader per call): every timeout
  key of its holds and the hash get the lease again, only while its count field exists.

  KEYS[1] lock hash
  KEYS[2] this reader's timeout key prefix {name}:<owner>:rwlock_timeout
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
redis.call('pexpire', KEYS[1], ARGV[1])
return holds
