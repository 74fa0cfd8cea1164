--[[
  Gives up one hold of a token lock; the last hold deletes it and, when someone is queued,
  announces the release, naming the first queued owner whose registration is still live
  ('released:<owner>'), or nobody ('released') when none is.

  Input:
    KEYS[1] lock key
    KEYS[2] waiter queue (sorted set of owners by arrival)
    KEYS[3] waiter registrations (hash owner -> server ms until which it counts as waiting)
    ARGV[1] owner
    ARGV[2] publish command: PUBLISH, or SPUBLISH on a cluster
    ARGV[3] release channel (same slot as KEYS[1])

  Output:
    0   released (key deleted, message published when someone was queued)
    n   still held by the owner with n holds left
    -1  not held by this owner: nothing changed
]]
local rcall = redis.call
local lock, owner = KEYS[1], ARGV[1]

local holds = tonumber(rcall('hget', lock, owner))
if not holds then
  return -1
end
if holds > 1 then
  return rcall('hincrby', lock, owner, -1)
end

rcall('del', lock)
-- Every caller that waits is queued: with nobody queued there is nobody to tell (a waiter whose
-- registration lapsed polls).
local waiting = rcall('zrange', KEYS[2], 0, 9)
if #waiting == 0 then
  return 0
end
local message = 'released'
local time = rcall('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
for _, next in ipairs(waiting) do
  -- A registration not renewed in time belongs to a waiter that crashed or gave up: skipped.
  if tonumber(rcall('hget', KEYS[3], next) or '0') > now then
    message = 'released:' .. next
    break
  end
  rcall('zrem', KEYS[2], next)
  rcall('hdel', KEYS[3], next)
end
rcall(ARGV[2], ARGV[3], message)
return 0
