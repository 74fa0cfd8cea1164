--[[
  Prefixed to the legacy scripts that trust the owner record: `describes(record, pttl)`, whether
  the record still describes the lock key whose PTTL is `pttl`.

  The record is written with the key, with the same TTL in the same script, so the two expire
  together for as long as they belong together. A record that outlived its key (deleted by a
  legacy peer whose clock runs ahead) must not vouch for the key a peer wrote since, even one
  holding the same timestamp (written in the same second): that key's TTL is its own. Servers
  before Redis 7 time each command of a script apart, hence one ms of tolerance.
]]
local function describes(record, pttl)
  return pttl >= 0 and math.abs(redis.call('pttl', record) - pttl) <= 1
end
