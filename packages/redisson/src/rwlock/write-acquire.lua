--[[
  Takes or re-enters the write half of a Redisson read-write lock (RedissonWriteLock).

  Only when nobody holds the hash, or this writer does. Re-entry ADDS the lease to the
  remaining TTL, as Redisson does. Readers, the same thread included, block a writer: there is
  no read-to-write upgrade.

  KEYS[1] lock hash
  ARGV[1] lease in ms
  ARGV[2] writer field "<uuid>:<thread>:write"

  Returns {1, holds, fence} when taken or re-entered (fence: the server clock in µs), {0, pttl}
  when held by readers or another writer.
]]
local function fence()
  local now = redis.call('time')
  return now[1] * 1000000 + now[2]
end
local lock = KEYS[1]
local mode = redis.call('hget', lock, 'mode')
if not mode then
  redis.call('hset', lock, 'mode', 'write', ARGV[2], 1)
  redis.call('pexpire', lock, ARGV[1])
  return {1, 1, fence()}
end
if mode == 'write' and redis.call('hexists', lock, ARGV[2]) == 1 then
  local holds = redis.call('hincrby', lock, ARGV[2], 1)
  redis.call('pexpire', lock, redis.call('pttl', lock) + tonumber(ARGV[1]))
  return {1, holds, fence()}
end
return {0, redis.call('pttl', lock)}
