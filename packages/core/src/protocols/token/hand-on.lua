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

  A message for one owner that registered an inbox (field STX + owner: a channel its subscriber
  alone listens to) goes there, on plain pub/sub, framed with the lock's channel:
  '<bytes of channel>:<channel><message>'; the other processes waiting for the lock are not
  woken for it. Everything else goes on the lock's channel, and so does a message for an inbox
  the releasing user may not publish to. With sharded pub/sub a channel lives
  in one slot, and an inbox in none: there every message goes on the lock's channel.

  keys: { lock, fence counter, per-key counter of earlier versions, queue, registrations }
]]
local function handOn(keys, publish, channel)
  local lock, queue, registrations = keys[1], keys[4], keys[5]
  -- The common case, nobody queued, asked the cheapest way (an empty sorted set does not exist):
  -- a ZRANGE's empty reply costs the server a few percent of an uncontended acquire+release more.
  if redis.call('pttl', queue) == -2 then
    return nil
  end
  local waiting = redis.call('zrange', queue, 0, 9)
  local message, inbox = 'released', nil
  local time = redis.call('time')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  for _, next in ipairs(waiting) do
    local terms, box = '\0' .. next, '\2' .. next
    -- A registration not renewed in time belongs to a waiter that crashed or gave up: skipped.
    -- Not a number: written under an owner an earlier version let start with STX (an inbox's field).
    if (tonumber(redis.call('hget', registrations, next) or '0') or 0) > now then
      local lease = redis.call('hget', registrations, terms)
      if publish == 'PUBLISH' then
        inbox = redis.call('hget', registrations, box)
      end
      -- A releasing user the ACL no longer lets give the lock a TTL names the waiter instead.
      if lease and mayExpire(lock) then
        -- Numbers as text made here (see acquire.lua): Redis would write them with a float printf.
        local fence = string.format('%d', nextFence(keys[2], keys[3]))
        redis.call('hset', lock, next, '1', '', fence)
        redis.call('pexpire', lock, lease)
        redis.call('zrem', queue, next)
        redis.call('hdel', registrations, next, terms, box)
        message = string.format('granted:%s:%s:%d:%s', fence, lease, now, next)
      else
        message = 'released:' .. next
      end
      break
    end
    redis.call('zrem', queue, next)
    redis.call('hdel', registrations, next, terms, box)
  end
  -- The releasing user may be refused the inbox (an ACL granting its own namespace's lock
  -- channels only; pcall answers the refusal as an error table): the release stands, and the
  -- waiter is told on the lock's channel. So it is when nobody listens on the inbox (its
  -- subscriber reconnecting): its waiters listen on the lock's channel too.
  local sent = inbox and redis.pcall(publish, inbox, #channel .. ':' .. channel .. message)
  if type(sent) ~= 'number' or sent == 0 then
    redis.call(publish, channel, message)
  end
  return message
end
