--[[
  Stamps a fence counter with the master it lives on. A counter last stamped by another master
  (a replica promoted by a failover, a restart) may have lost the last increments that master
  made before it went away, and with them fences already handed out: it is raised to the next
  epoch, the next multiple of 2^32, above any value the old master can have reached.

  A counter that does not exist yet has handed out nothing: nothing is written (the acquire
  script that creates it stamps it). An existing counter never stamped (made by an earlier
  version) is stamped without a raise, unless the caller last saw it under another master.

  Input:
    KEYS[1] fence counter
    KEYS[2] the counter's stamp: the run id of the master that last stamped it (same slot)
    ARGV[1] the run id the caller last saw for this counter, '' for none

  Output:
    { run_id, raised, time }  this master's run id; raised = 1 when the counter moved to a new
                              epoch; the server's TIME (its clock is checked against the caller's)
]]
local rcall = redis.call
local master = string.match(rcall('info', 'server'), 'run_id:(%x+)')
local time = rcall('time')
local stamp = rcall('get', KEYS[2])
if stamp == master then
  return { master, 0, time }
end
local counter = rcall('get', KEYS[1])
if not counter then
  return { master, 0, time }
end
rcall('set', KEYS[2], master)
if not stamp and (ARGV[1] == '' or ARGV[1] == master) then
  return { master, 0, time }
end
local epoch = 4294967296
rcall('set', KEYS[1], string.format('%.0f', (math.floor(tonumber(counter) / epoch) + 1) * epoch))
return { master, 1, time }
