--[[
  Gives up one hold of a token lock; the last one deletes it and hands it on to the queue
  (handOn, from hand-on.lua: a grant to the next live waiter, or a message naming it).

  Input:
    KEYS[1] lock key
    KEYS[2] fence counter (a direct grant draws the next owner's fence from it)
    KEYS[3] the per-key counter of earlier versions
    KEYS[4] waiter queue (sorted set of owners by arrival)
    KEYS[5] waiter registrations (hash owner -> server ms until which it counts as waiting,
            NUL + owner -> the lease of a direct grant, STX + owner -> its inbox channel)
    ARGV[1] owner
    ARGV[2] release channel (same slot as KEYS[1]; sent, not built here: an ioredis keyPrefix
            applies to KEYS, not to the channels its subscriber listens on)
    ARGV[3] release id, recorded (field SOH) when it takes off one of several holds, so that it
            is applied once however often it is sent (see recent-ids.lua); '' for none
    ARGV[4] optional: acquire attempt id, for the undo of that attempt: the hold is taken off
            only if that attempt was applied for the owner here (acquire.lua records the last
            ones in field NUL + owner); absent or '' for a release of any hold
    ARGV[5] optional: publish command, SPUBLISH on a cluster; absent for PUBLISH
  Trailing arguments are left out when they say nothing: each one costs every release.

  Output:
    0   released (key deleted, nobody queued)
    msg released, and the message published to the queue (see hand-on.lua; unframed when it
        went to an inbox): a direct grant in it may go to a waiter of the releasing client
        without waiting for the message
    n   still held by the owner with n holds left (untouched by an undo of an attempt not applied here)
    -1  not held by this owner: nothing changed
]]
local lock, owner, id, attempt = KEYS[1], ARGV[1], ARGV[3], ARGV[4] or ''

local held = redis.call('hget', lock, owner)
if not held then
  return -1
end
-- The attempt may never have run here (it failed, or got no answer): the holds found are then
-- the owner's earlier ones, still in use.
if attempt ~= '' and not idsHave(redis.call('hget', lock, '\0' .. owner), attempt) then
  return tonumber(held)
end
-- Two HGETs, not one HMGET: HMGET is not in the command set the README gives ACL users.
local applied = id ~= '' and redis.call('hget', lock, '\1')
if idsHave(applied, id) then
  return tonumber(held)
end
-- Compared as text, sparing every release a strtod: one hold is always written '1'.
if held ~= '1' then
  if id ~= '' then
    redis.call('hset', lock, '\1', idsWith(applied, id))
  end
  return redis.call('hincrby', lock, owner, -1)
end

redis.call('del', lock)
return handOn(KEYS, ARGV[5] or 'PUBLISH', ARGV[2]) or 0
