--[[
  Takes or re-enters the read half of a Redisson read-write lock (RedissonReadLock).

  Readers share the hash (mode "read", one count field per reader thread); the writer may also
  take read holds. Every read hold gets its own timeout key "<prefix>:<n>" with the lease, so
  the hash can be kept alive exactly as long as some reader's hold is.

  KEYS[1] lock hash
  KEYS[2] this reader's timeout key prefix {name}:<owner>:rwlock_timeout
  ARGV[1] lease in ms
  ARGV[2] owner field "<uuid>:<thread>"
  ARGV[3] the same thread's writer field "<uuid>:<thread>:write"

  Returns {1, holds, fence} when taken or re-entered (fence: the server clock in µs), {0, pttl}
  when write-locked by someone else.
]]
local function fence()
  local now = redis.call('time')
  return now[1] * 1000000 + now[2]
end
local lock, lease = KEYS[1], tonumber(ARGV[1])
local mode = redis.call('hget', lock, 'mode')
if mode == 'write' and redis.call('hexists', lock, ARGV[3]) == 0 then
  return {0, redis.call('pttl', lock)}
end
if not mode then
  redis.call('hset', lock, 'mode', 'read')
end
local holds = redis.call('hincrby', lock, ARGV[2], 1)
redis.call('set', KEYS[2] .. ':' .. holds, 1, 'px', lease)
redis.call('pexpire', lock, math.max(redis.call('pttl', lock), lease))
return {1, holds, fence()}
