<?php
// Test driver for Lock.php: `php cli.php <command> <json arguments>`, one JSON line out (one a
// hold for `worker`).
// The deprecation PHP 8 raises for sleep(0.3) goes to stderr, keeping stdout parseable.
ini_set('display_errors', 'stderr');
require '/usr/share/php/Predis/autoload.php';
require __DIR__ . '/Lock.php';

$command = $argv[1];
$args = json_decode($argv[2], true);
// `cluster` (optional): ports of Redis Cluster nodes to start from; Predis then runs in its
// Redis Cluster mode (slot map, MOVED/ASK redirections) and `port` is not used.
$client = isset($args['cluster'])
    ? new Predis\Client(array_map(function ($port) {
        return 'tcp://127.0.0.1:' . (int) $port;
    }, $args['cluster']), ['cluster' => 'redis'])
    : new Predis\Client(['host' => '127.0.0.1', 'port' => (int) $args['port']]);
$key = $args['key'];
$expire = $args['expire'] ?? Lock::LOCK_EXPIRE;
// `at` (optional): what this host's time() reads now, in Unix seconds, instead of an `offset`: a
// host as far off as that, however long this process took to start.
$offset = isset($args['at']) ? $args['at'] - time() : ($args['offset'] ?? 0);
$lock = new Lock($client, $key, $expire, $offset);

function state($client, $key)
{
    // A key of another type (a Redisson hash, say) is reported by its type: GET would throw.
    $type = (string) $client->type($key);
    $value = $type === 'string' ? $client->get($key) : null;
    return ['value' => $value, 'ttl' => $client->ttl($key), 'time' => time(), 'type' => $type];
}

switch ($command) {
    case 'lock':
        // What PHP warned about during lock(): how sleep(0.3) turned into sleep(0), say.
        $notices = [];
        set_error_handler(function ($level, $message) use (&$notices) {
            $notices[] = $message;
            return false;
        });
        try {
            $acquired = $lock->lock();
            $error = null;
        } catch (Throwable $e) {
            $acquired = false;
            $error = $e->getMessage();
        }
        restore_error_handler();
        echo json_encode(['acquired' => $acquired, 'error' => $error, 'tries' => $lock->tries,
            'notices' => $notices] + state($client, $key)), "\n";
        break;
    case 'unlock':
        $before = $client->get($key);
        $lock->unlock();
        echo json_encode(['before' => $before] + state($client, $key)), "\n";
        break;
    case 'read':
        // How PHP code reads a value: the seed's own comparison, plus what a PHP reader sees.
        $state = state($client, $key);
        $value = $state['value'];
        echo json_encode($state + [
            'digits' => is_string($value) && ctype_digit($value),
            'isInt' => is_string($value) && (string) (int) $value === $value,
            'liveBySeedCheck' => $value !== null && (int) $value > time(),
            // The host's wall clock in ms, read just before the key's PTTL: mtime + pttl is a
            // lower bound of when Redis expires the key, on this host's clock.
            'mtime' => microtime(true) * 1000,
            'pttl' => $client->pttl($key),
        ]), "\n";
        break;
    case 'crash-after-setnx':
        // The SETNX-then-EXPIRE variant of the seed's acquire step, with the value the seed
        // writes (time() + expire + 1), in a PHP process killed (SIGKILL) between the two
        // commands: the key is left without a TTL (legacy-and-php.md §3.1, B10).
        $written = $client->setnx($key, (time() + ($args['offset'] ?? 0)) + $expire + 1);
        echo json_encode(['setnx' => $written] + state($client, $key)), "\n";
        posix_kill(getmypid(), 9);
        sleep(5);
        $client->expire($key, $expire + 1);
        fwrite(STDERR, "still alive after SIGKILL\n");
        exit(3);
    case 'worker':
        // One member of a contending fleet (see fleet/fleet.ts for the handshake): after `go`,
        // lock, read-modify-write the witness counter, unlock, until the shared monotonic
        // deadline; one JSON line per hold with its hrtime interval. hrtime(true) reads
        // CLOCK_MONOTONIC, the clock Node's process.hrtime.bigint() reads.
        mt_srand($args['seed']);
        $client->rpush($args['fleet'] . ':ready', [$args['id']]);
        $go = $client->blpop([$args['fleet'] . ':go:' . $args['id']], 30);
        if ($go === null) {
            fwrite(STDERR, "no go within 30 s\n");
            exit(1);
        }
        $until = (int) $go[1];
        $announced = false;
        while (hrtime(true) < $until) {
            if ($lock->lock()) {
                $start = hrtime(true);
                if (!$announced) $client->rpush($args['fleet'] . ':held', [$args['id']]);
                $announced = true;
                $seen = (int) $client->get($args['witness']);
                usleep(mt_rand($args['work'][0], $args['work'][1]) * 1000);
                $client->set($args['witness'], $seen + 1);
                $end = hrtime(true);
                $lock->unlock();
                echo json_encode(['worker' => $args['id'], 'start' => (string) $start, 'end' => (string) $end,
                    'fence' => 0]), "\n";
            } else {
                usleep(mt_rand(10, 30) * 1000);
            }
        }
        break;
    default:
        fwrite(STDERR, "unknown command $command\n");
        exit(2);
}
