<?php
// Test driver for Lock.php: `php cli.php <command> <json arguments>`, one JSON line out.
// The deprecation PHP 8 raises for sleep(0.3) goes to stderr, keeping stdout parseable.
ini_set('display_errors', 'stderr');
require '/usr/share/php/Predis/autoload.php';
require __DIR__ . '/Lock.php';

$command = $argv[1];
$args = json_decode($argv[2], true);
$client = new Predis\Client(['host' => '127.0.0.1', 'port' => (int) $args['port']]);
$key = $args['key'];
$expire = $args['expire'] ?? Lock::LOCK_EXPIRE;
$lock = new Lock($client, $key, $expire, $args['offset'] ?? 0);

function state($client, $key)
{
    $value = $client->get($key);
    return ['value' => $value, 'ttl' => $client->ttl($key), 'time' => time()];
}

switch ($command) {
    case 'lock':
        $start = hrtime(true);
        try {
            $acquired = $lock->lock();
            $error = null;
        } catch (Throwable $e) {
            $acquired = false;
            $error = $e->getMessage();
        }
        $ms = (hrtime(true) - $start) / 1e6;
        echo json_encode(['acquired' => $acquired, 'error' => $error, 'tries' => $lock->tries, 'ms' => $ms]
            + state($client, $key)), "\n";
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
        ]), "\n";
        break;
    case 'worker':
        // One member of a contending fleet: lock, enter the witness set, work, leave, unlock.
        mt_srand($args['seed']);
        $me = 'php:' . $args['id'];
        $deadline = hrtime(true) + $args['ms'] * 1e6;
        $acquired = 0;
        $overlaps = [];
        while (hrtime(true) < $deadline) {
            if ($lock->lock()) {
                $acquired++;
                $seen = $client->transaction(function ($tx) use ($args, $me) {
                    $tx->sadd($args['witness'], [$me]);
                    $tx->smembers($args['witness']);
                })[1];
                foreach ($seen as $other) {
                    if ($other !== $me) $overlaps[] = [$me, $other];
                }
                usleep(mt_rand(5, 30) * 1000);
                $client->srem($args['witness'], [$me]);
                $lock->unlock();
            } else {
                usleep(mt_rand(10, 30) * 1000);
            }
        }
        echo json_encode(['acquired' => $acquired, 'overlaps' => $overlaps]), "\n";
        break;
    default:
        fwrite(STDERR, "unknown command $command\n");
        exit(2);
}
