--[[
  Takes or re-enters the read half of a Redisson read-write lock (RedissonReadLock).

  Readers share the hash (mode "read", one count field per reader thread); the writer may also
  take read holds. Every read hold gets its own timeout key "<prefix>:<n>" with the lease, so
  the hash can be kept alive exactly as long as some reader's hold is: a reader is promised the
  longest of its own timeout keys, and the hash never lives shorter than that.

  A reader's first hold draws a fence from the counter the RLock uses for the same name, kept in
  the reader's fence key (which Redisson never reads) for its re-entries; the writer's own read
  holds carry the writer's fence instead, since they are nested in its write hold, and lengthen
  its attempt latches with the hash (see attempt.lua: a resent write re-entry must still find its
  latch as long as the write holds live).

  KEYS[1] lock hash
  KEYS[2] this reader's timeout key prefix {name}:<owner>:rwlock_timeout
  KEYS[3] fence counter redisson_lock_token:{name} (never expires)
  KEYS[4] this reader's fence key {name}:<owner>:rwlock_fence
  KEYS[5] the same thread's writer attempt latches redisson_lock_attempt:{name}:<owner>:write
  KEYS[6] optional: the reader's attempt latches redisson_lock_attempt:{name}:<owner>
  ARGV[1] lease in ms
  ARGV[2] owner field "<uuid>:<thread>"
  ARGV[3] the same thread's writer field "<uuid>:<thread>:write"
  ARGV[4] with KEYS[6]: this attempt's id

  Returns {1, holds, fence, ttl} when taken or re-entered (ttl: the longest of the reader's
  timeout keys), {0, pttl} when write-locked by someone else.
]]
local lock, prefix, counter, fence_key, latches = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6]
local lease, attempt = tonumber(ARGV[1]), ARGV[4]

-- The longest TTL among the timeout keys of this reader's holds 1..holds, at least `from`.
local function longest(holds, from)
  local own = from
  for n = 1, holds do
    own = math.max(own, redis.call('pttl', prefix .. ':' .. n))
  end
  return own
end

-- The reader's timeout and fence keys get theirs with SET PX, which needs no PEXPIRE.
if not mayExpire(lock, latches, KEYS[5]) then
  return redis.error_reply(EXPIRY_REFUSED)
end
local earlier = repeatedAttempt(latches, attempt, lock, ARGV[2])
if earlier then
  local holds = tonumber(redis.call('hget', lock, ARGV[2]))
  return {1, holds, earlier, longest(holds, -2)}
end
local mode = redis.call('hget', lock, 'mode')
if mode == 'write' and redis.call('hexists', lock, ARGV[3]) == 0 then
  return {0, redis.call('pttl', lock)}
end
local fence
if redis.call('hexists', lock, ARGV[2]) == 1 then
  fence = tonumber(redis.call('get', fence_key))
end
if not fence then
  -- Drawn before anything is written: if the counter cannot be incremented, nothing changes.
  if mode == 'write' then
    fence = tonumber(redis.call('get', counter) or '0')
  else
    fence = redis.call('incr', counter)
  end
end
local holds = tonumber(redis.call('hget', lock, ARGV[2]) or '0') + 1
local own = longest(holds - 1, lease)
recordAttempt(latches, attempt, fence, holds, math.max(redis.call('pttl', lock), own))
if not mode then
  redis.call('hset', lock, 'mode', 'read')
end
redis.call('hincrby', lock, ARGV[2], 1)
redis.call('set', prefix .. ':' .. holds, 1, 'px', lease)
redis.call('set', fence_key, fence, 'px', own)
local ttl = math.max(redis.call('pttl', lock), own)
redis.call('pexpire', lock, ttl)
if mode == 'write' then
  keepAttempts(KEYS[5], ttl)
end
return {1, holds, fence, own}
