--[[
  Prefixed to the token format's release and abandon scripts, after expiry-guard.lua and
  next-fence.lua: `handOn(keys, publish, channel)` runs once the lock key is deleted and tells the queue; it
  answers the message it published (nil when nobody was queued).

  The first queued owner whose registration is still live is the next owner. When it registered
  terms for a direct grant (field NUL + owner: the lease to grant, written only by a fresh owner
  on one master without replica confirmation), the lock is written for it here, with a fence of
  its own, and the message carries the grant: 'granted:<fence>:<lease>:<server ms>:<owner>'. The
  waiter then needs no round trip of its own. Otherwise the message names it,
  'released:<owner>', and it tries again. With nobody live in the first ten, 'released' wakes
  one waiter per process. With nobody queued nothing is published (a waiter whose registration
  lapsed polls).

  keys: { lock, fence counter, per-key counter of earlier versions, queue, registrations }
]]
local function handOn(keys, publish, channel)
  local lock, queue, registrations = keys[1], keys[4], keys[5]
  local waiting = redis.call('zrange', queue, 0, 9)
  if #waiting == 0 then
    return nil
  end
  local message = 'released'
  local time = redis.call('time')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  for _, next in ipairs(waiting) do
    local terms = '\0' .. next
    -- A registration not renewed in time belongs to a waiter that crashed or gave up: skipped.
    if tonumber(redis.call('hget', registrations, next) or '0') > now then
      local lease = redis.call('hget', registrations, terms)
      -- A releasing user the ACL no longer lets give the lock a TTL names the waiter instead.
      if lease and mayExpire(lock) then
        local fence = nextFence(keys[2], keys[3])
        redis.call('hset', lock, next, 1, '', fence)
        redis.call('pexpire', lock, lease)
        redis.call('zrem', queue, next)
        redis.call('hdel', registrations, next, terms)
        message = 'granted:' .. fence .. ':' .. lease .. ':' .. now .. ':' .. next
      else
        message = 'released:' .. next
      end
      break
    end
    redis.call('zrem', queue, next)
    redis.call('hdel', registrations, next, terms)
  end
  redis.call(publish, channel, message)
  return message
end
