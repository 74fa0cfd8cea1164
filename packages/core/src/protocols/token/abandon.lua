--[[
  Takes an owner out of a token lock's waiter queue (its waiting call ended without the lock).
  A fresh owner that holds the lock was granted it by a release while it gave up: it hands the
  lock on (handOn, from hand-on.lua) rather than leave it held by nobody until its lease ends.
  When the lock is free, the release may have named this owner: the queue is told again, so the
  next in line is named (or granted the lock) instead of waiting for its next poll.

  Input:
    KEYS[1..5] as release.lua: lock, fence counter, per-key counter of earlier versions, waiter
               queue, registrations
    ARGV[1] owner
    ARGV[2] '1' when the owner is fresh (made for the call that gives up: any hold of it is a grant
            that call never used)
    ARGV[3] publish command: PUBLISH, or SPUBLISH on a cluster
    ARGV[4] release channel
]]
local owner = ARGV[1]
redis.call('zrem', KEYS[4], owner)
redis.call('hdel', KEYS[5], owner, '\0' .. owner, '\2' .. owner)
if ARGV[2] == '1' and redis.call('hexists', KEYS[1], owner) == 1 then
  redis.call('del', KEYS[1])
  handOn(KEYS, ARGV[3], ARGV[4])
elseif redis.call('pttl', KEYS[1]) == -2 then
  -- Free: the release may have named this owner, and the next in line would not hear of it.
  handOn(KEYS, ARGV[3], ARGV[4])
end
return 0
