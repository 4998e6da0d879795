
use builtin;
use str;

set edit:completion:arg-completer[retry] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'retry'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'retry'= {
            cand -n 'Attempts in total, the first included, N >= 1 [default: 5; none with --max-time alone]'
            cand --max 'Attempts in total, the first included, N >= 1 [default: 5; none with --max-time alone]'
            cand --backoff 'How the delay ceiling grows: exponential, linear or fixed [default: exponential]'
            cand -b 'First delay ceiling; above 30s it also raises the default cap [default: 1s]'
            cand --base 'First delay ceiling; above 30s it also raises the default cap [default: 1s]'
            cand -c 'Largest single delay, at least --base [default: 30s, or --base if longer]'
            cand --cap 'Largest single delay, at least --base [default: 30s, or --base if longer]'
            cand -m 'Growth factor of --backoff exponential, X >= 1 [default: 2]'
            cand --multiplier 'Growth factor of --backoff exponential, X >= 1 [default: 2]'
            cand -j 'Randomisation of each delay [default: full]'
            cand --jitter 'Randomisation of each delay [default: full]'
            cand --jitter-max 'Largest random addition for --jitter additive, at most --cap [default: 1s]'
            cand --max-time 'Overall deadline from start: no sleep or attempt runs past it; without --max, no attempt limit (0 or inf: none)'
            cand -t 'Per-attempt time limit; the attempt''s process group is then stopped (0 or inf: none)'
            cand --timeout 'Per-attempt time limit; the attempt''s process group is then stopped (0 or inf: none)'
            cand --idle-timeout 'Stop an attempt after DUR without progress: no byte received (HTTP mode), or no output from COMMAND (0 or inf: none) [default: 30s in HTTP mode, none for a COMMAND]'
            cand --reset-after 'An attempt that ran at least DUR before failing resets the backoff'
            cand --stagger 'Wait a random time from 0 to DUR before the first attempt, so that a fleet started at the same moment (one cron minute) does not start in step'
            cand --seed 'Seed for the jitter RNG, 0 to 2^53-1: the same schedule on every platform and version [default: from the OS]'
            cand --retry-on 'Only these exit codes are retryable (e.g. 1,75,100-110)'
            cand --stop-on 'These exit codes are permanent failures: stop at once'
            cand --success-on 'These exit codes count as success'
            cand --retry-if-output 'Retry a failure whose stdout or stderr has a line matching REGEX, whatever its exit code (repeatable)'
            cand --stop-if-output 'Never retry a failure whose stdout or stderr has a line matching REGEX (repeatable; wins over --retry-if-output)'
            cand --stop-signal 'Signal sent to the attempt''s process group on timeout: a name or number as ''kill -l'' lists, such as INT, SIGUSR1 or RTMIN+2 [default: TERM]'
            cand -k 'Grace period after the stop signal before KILL [default: 5s]'
            cand --kill-after 'Grace period after the stop signal before KILL [default: 5s]'
            cand --replay-stdin-max 'The most stdin --replay-stdin takes, such as 64M or 2G (inf: no limit) [default: 1G]'
            cand --nested 'Inside another retry: multiply attempts (warn), or run COMMAND once'
            cand --log-format 'Log line format [default: text]'
            cand --log-file 'Append the log to PATH instead of stderr'
            cand --http 'Probe URL over HTTP(S) instead of running a command'
            cand -X 'Request method [default: GET, or POST with --data or --json]'
            cand --method 'Request method [default: GET, or POST with --data or --json]'
            cand -H 'Request header ''Name: value'', or @FILE of header lines (repeatable)'
            cand --header 'Request header ''Name: value'', or @FILE of header lines (repeatable)'
            cand -d 'Form body: the string, or @FILE for a file''s contents without CR and LF (as curl); repeatable, joined with ''&'''
            cand --data 'Form body: the string, or @FILE for a file''s contents without CR and LF (as curl); repeatable, joined with ''&'''
            cand --data-binary 'As --data, but @FILE is sent byte for byte'
            cand --json 'JSON request body: the string, or @FILE; sent with JSON Content-Type and Accept'
            cand --connect-timeout 'Time limit for establishing each connection [default: 10s]'
            cand --max-redirs 'Redirects to follow in one attempt; more exits 47 (0: do not follow) [default: 10]'
            cand --retry-after-max 'Longest Retry-After to wait for; a server asking more ends the run [default: 10m]'
            cand --cacert 'Also trust the CA certificates in this PEM file'
            cand -o 'Write the accepted response''s body to FILE instead of stdout'
            cand --output 'Write the accepted response''s body to FILE instead of stdout'
            cand --expect 'Statuses that count as success (e.g. 200,204 or 2xx) [default: 2xx]'
            cand --retry-status 'Statuses worth retrying, replacing the default 408,429,500,502-504'
            cand --idempotency-key 'Send this Idempotency-Key on every attempt (''auto'': a random UUID), so POST and PATCH may be retried'
            cand --simulate 'Simulate N clients that all fail at once under this policy, in virtual time, and report'
            cand --outage 'The simulated server fails every request until DUR has passed'
            cand --capacity 'The simulated server admits RATE requests a second (a token bucket), rejecting the rest'
            cand --capacity-burst 'Requests --capacity admits at once, its bucket''s depth [default: 100ms worth]'
            cand --model 'Another server model: occ (each client reads a version, then writes it back; a write fails if another came in between)'
            cand --format 'Report format of the simulation [default: text]'
            cand --plot 'Also draw the load and the clients through over time as an SVG picture in FILE'
            cand --group 'Share pace, budget and breaker with every invocation of the same group'
            cand --state 'Where the group''s state lives: a directory, or redis://, rediss://, unix:// [default: ~/.local/state/retry]'
            cand --state-password-file 'Read the Redis password from FILE (its first line), not from the URL'
            cand --pace 'Start the group''s retries at no more than RATE, e.g. 20/s or 600/m'
            cand --pace-burst 'Retries of the group that may start at once under --pace [default: 1]'
            cand --budget 'Stop retrying while the whole group fails: a shared retry budget [default: 100:0.1]'
            cand --breaker 'After THRESHOLD failed runs in a row, refuse to run for COOLDOWN (exit 75) [default: 5:30s]'
            cand --metrics-file 'Write the run''s metrics to PATH for node_exporter''s textfile collector'
            cand --metrics-push 'Push the run''s metrics to a Prometheus Pushgateway at URL, e.g. http://pushgateway:9091'
            cand --metrics-job 'The metrics'' job label (Pushgateway: grouping key) [default: --group, else COMMAND''s name, or http]'
            cand --metrics-label 'Add a label to the metrics (Pushgateway: a grouping key), e.g. instance=$(hostname); repeatable'
            cand --ping 'Ping a heartbeat monitor at URL (healthchecks.io protocol)'
            cand --color 'Colour retry''s own log prefix and outcome words [default: auto]'
            cand --ci-annotations 'GitHub Actions annotations for failed attempts and giving up [default: auto]'
            cand --forever 'No attempt limit (still bounded by --max-time)'
            cand --restart-on-success 'Start COMMAND again after a success too, as a service supervisor does; a quick exit still backs off, one up for --reset-after starts from the first step'
            cand --no-retry-on-timeout 'A timed-out attempt is a permanent failure (with a COMMAND: needs --timeout)'
            cand --foreground 'Run COMMAND in retry''s own process group (for programs that read the terminal)'
            cand --replay-stdin 'Read stdin once and give every attempt the same bytes'
            cand -q 'Fewer log lines: -q only the final give-up line, -qq nothing'
            cand --quiet 'Fewer log lines: -q only the final give-up line, -qq nothing'
            cand -v 'More log lines: attempt starts and the command line'
            cand --verbose 'More log lines: attempt starts and the command line'
            cand --insecure 'Do not verify the server''s certificate (warned about on every run)'
            cand --retry-non-idempotent 'Retry POST and PATCH even without an idempotency key'
            cand --compare 'Simulate every jitter kind under the same policy and show them side by side'
            cand --state-required 'Exit 125 when the state store cannot be used, instead of running without it'
            cand --state-show 'Print the group''s pace schedule, budget count and breaker state, and exit'
            cand --ping-log 'Send a summary of the run (attempts, times, the log''s last lines; masked, at most 10 KB) with the final ping'
            cand --dry-run 'Print the delay schedule this policy produces and run nothing'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
    ]
    $completions[$command]
}
