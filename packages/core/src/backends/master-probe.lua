--[[
  Reads the run id of the master that serves a slot, for formats without a fence counter to
  stamp (see master-watch.ts): a run id other than the one read before is a change of master.
  Writes nothing, and reads no key: KEYS[1] only routes the call on a cluster.

  Input:
    KEYS[1] a lock key of the slot concerned

  Output:
    { run_id }
]]
return { string.match(redis.call('info', 'server'), 'run_id:(%x+)') }
