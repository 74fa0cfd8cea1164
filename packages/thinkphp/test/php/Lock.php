<?php
// A port of the ThinkPHP service class of seed 001 (app\service\Lock), for interop tests only:
// the same two Lua scripts (minus their redis.log debug lines), the same arguments, the same
// constants and retry loop. Two test seams are added and nothing else changes: the expire value
// can be passed in (the seed hard-codes self::LOCK_EXPIRE), and time() can be shifted to play a
// host whose clock is off. `tries` only counts attempts for the tests' reports.

class Lock
{
    const LOCK_EXPIRE = 3;
    const LOCK_RETRY_MAX = 3;
    const LOCK_SLEEP = 0.3;

    /** @var Predis\Client */
    private $client;
    private $lockKey;
    private $expire;
    private $clockOffset;
    /** How many times acquire() ran during the last lock() (for the tests' reports). */
    public $tries = 0;

    public function __construct($client, $lockKey, $expire = self::LOCK_EXPIRE, $clockOffset = 0)
    {
        $this->client = $client;
        $this->lockKey = $lockKey;
        $this->expire = $expire;
        $this->clockOffset = $clockOffset;
    }

    private function time()
    {
        return time() + $this->clockOffset;
    }

    private function getLockScript()
    {
        return <<<LUA
local key_lock = KEYS[1]
local key_lock_expired = tonumber(ARGV[1])
local key_lock_expire = tonumber(ARGV[2])
local time_now = tonumber(ARGV[3])
local res = redis.call('SETNX', key_lock, key_lock_expired)
if (res == 1) then
    redis.call('EXPIRE', key_lock, key_lock_expire + 1)
    return 0
end
local expired = redis.call('GET', key_lock)
if (not expired) then
    return 1
end
expired = tonumber(expired)
if (expired > time_now) then
    return 2
end
local key_lock_expired_new = key_lock_expired + key_lock_expire + 1
local expired_old = tonumber(redis.call('GETSET', key_lock, key_lock_expired_new))
if (expired_old == expired) then
    redis.call('EXPIRE', key_lock, key_lock_expire + 1)
    return 0
end
return 3
LUA;
    }

    private function getUnLockScript()
    {
        return <<<LUA
local key_lock = KEYS[1]
local time_now = tonumber(ARGV[1])
local key_lock_expired = redis.call('GET', key_lock)
if (key_lock_expired and tonumber(key_lock_expired) <= time_now) then
    redis.call('DEL', key_lock)
end
LUA;
    }

    private function acquire()
    {
        $this->tries++;
        return $this->client->eval($this->getLockScript(), 1, $this->lockKey,
            $this->time() + $this->expire + 1, $this->expire, $this->time());
    }

    public function lock()
    {
        $this->tries = 0;
        $retry = 1;
        while (0 != ($res = $this->acquire()) && (self::LOCK_RETRY_MAX > $retry)) {
            2 == $res && sleep(self::LOCK_SLEEP);
            $retry++;
        }
        return 0 == $res;
    }

    public function unlock()
    {
        $this->client->eval($this->getUnLockScript(), 1, $this->lockKey, $this->time());
    }
}
