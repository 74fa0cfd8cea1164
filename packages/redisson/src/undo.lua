--[[
  Prefixed to the undo scripts of the RLock, fenced, read and write locks (the fair lock has its
  own, fair/undo.lua): the engine gives back a grant whose reply came after the attempt had
  timed out, for a thread that may hold the lock besides. Each is its kind's unlock script
  wrapped as a function, `unlock`, which takes a hold off exactly as an unlock does (a last hold
  publishes the unlock message first, then deletes the hash and the owner's attempt list, so Java
  waiters wake), then this, then a line naming where its kind's script keeps the field's attempt
  list and the field, with the attempt id passed last before the unlock latch's lifetime.

  `undoAttempt(latches, field, attempt, unlock)`: runs `unlock` only when `attempt` counted a hold
  in the lock's current life: its latch must be in the field's attempt list (attempt.lua,
  prefixed). By the time the grant came back its lease may have ended and the thread taken the
  lock again; the list ended with the old life, or was cut to the new holds by the new attempt,
  so the new hold is left alone. The unlock takes the latch out with the hold (`forgetAttempt`,
  the attempt id being where a release passes the one it gives back), so that a copy of the undo
  finds nothing; one that stops having written nothing (the RLock's needs the fair queue's keys,
  or the ACL refuses its message) leaves it for a retry. A last hold's latch goes with the list.
  Answers as `unlock`; 0 (nothing written) when the attempt counted no hold the field still has,
  nil when it has none.
]]
local function undoAttempt(latches, field, attempt, unlock)
  -- Before the unlock runs: the write lock's publishes even when the lock is gone.
  if redis.call('hexists', KEYS[1], field) == 0 then
    return nil
  end
  if not appliedAttempt(latches, attempt) then
    return 0
  end
  return unlock()
end
