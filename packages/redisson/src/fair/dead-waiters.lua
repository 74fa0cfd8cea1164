--[[
  Prefixed to the fair-lock scripts that drop dead waiters (those whose deadline has passed)
  from the head of the queue, as every Redisson fair-lock script but acquireFailed does first.

  `deadWaiters(queue, deadlines, now)`: how many waiters at the head are dead, and the first one
  alive (nil when none), found without writing, so that a script can still fail with nothing
  changed after it. A waiter with no deadline (its score evicted or deleted) stops the count, as
  in Redisson: it may be alive, and only its own attempt or abandon takes it out.
  `dropWaiters(queue, deadlines, count)`: takes the first `count` waiters out of both.
  `wakeHead(queue, deadlines, dead, head, publish, channels, message)`: for a script freeing the
  lock: publishes `message` on the channel of `head` (the first live waiter, if any) with the
  `publish` command, then drops the `dead` waiters ahead of it.
]]
local function deadWaiters(queue, deadlines, now)
  local dead = 0
  local head = redis.call('lindex', queue, 0)
  while head do
    local deadline = tonumber(redis.call('zscore', deadlines, head))
    if not deadline or deadline > now then break end
    dead = dead + 1
    head = redis.call('lindex', queue, dead)
  end
  return dead, head
end

local function dropWaiters(queue, deadlines, count)
  for _ = 1, count do
    redis.call('zrem', deadlines, redis.call('lpop', queue))
  end
end

local function wakeHead(queue, deadlines, dead, head, publish, channels, message)
  if head then
    redis.call(publish, channels .. ':' .. head, message)
  end
  dropWaiters(queue, deadlines, dead)
end
