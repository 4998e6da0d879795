complete -c retry -s n -l max -d 'Attempts in total, the first included, N >= 1 [default: 5; none with --max-time alone]' -r
complete -c retry -l backoff -d 'How the delay ceiling grows: exponential, linear or fixed [default: exponential]' -r -f -a "exponential\t'base * multiplier^(k-1), capped'
linear\t'base * k, capped'
fixed\t'base every time'"
complete -c retry -s b -l base -d 'First delay ceiling; above 30s it also raises the default cap [default: 1s]' -r
complete -c retry -s c -l cap -d 'Largest single delay, at least --base [default: 30s, or --base if longer]' -r
complete -c retry -s m -l multiplier -d 'Growth factor of --backoff exponential, X >= 1 [default: 2]' -r
complete -c retry -s j -l jitter -d 'Randomisation of each delay [default: full]' -r -f -a "none\t'exactly the ceiling'
full\t'uniform between 0 and the ceiling'
equal\t'half the ceiling plus uniform up to the other half'
decorrelated\t'uniform between base and min(cap, 3 * the previous delay); growth flags do not apply'
additive\t'the ceiling, kept --jitter-max below the cap, plus uniform up to --jitter-max'"
complete -c retry -l jitter-max -d 'Largest random addition for --jitter additive, at most --cap [default: 1s]' -r
complete -c retry -l max-time -d 'Overall deadline from start: no sleep or attempt runs past it; without --max, no attempt limit (0 or inf: none)' -r
complete -c retry -s t -l timeout -d 'Per-attempt time limit; the attempt\'s process group is then stopped (0 or inf: none)' -r
complete -c retry -l idle-timeout -d 'Stop an attempt after DUR without progress: no byte received (HTTP mode), or nothing written to stdout or stderr by COMMAND (0 or inf: none) [default: 30s in HTTP mode, none for a COMMAND]' -r
complete -c retry -l reset-after -d 'An attempt that ran at least DUR before failing resets the backoff' -r
complete -c retry -l stagger -d 'Wait a random time from 0 to DUR before the first attempt, so that a fleet started at the same moment (one cron minute) does not start in step' -r
complete -c retry -l seed -d 'Seed for the jitter RNG, 0 to 2^53-1: the same schedule on every platform and version [default: from the OS]' -r
complete -c retry -l retry-on -d 'Only these exit codes are retryable (e.g. 1,75,100-110)' -r
complete -c retry -l stop-on -d 'These exit codes are permanent failures: stop at once' -r
complete -c retry -l success-on -d 'These exit codes count as success' -r
complete -c retry -l retry-if-output -d 'Retry a failure whose stdout or stderr has a line matching REGEX, whatever its exit code (repeatable)' -r
complete -c retry -l stop-if-output -d 'Never retry a failure whose stdout or stderr has a line matching REGEX (repeatable; wins over --retry-if-output)' -r
complete -c retry -l stop-signal -d 'Signal sent to the attempt\'s process group on timeout: a name or number as \'kill -l\' lists, such as INT, SIGUSR1 or RTMIN+2 [default: TERM]' -r
complete -c retry -s k -l kill-after -d 'Grace period after the stop signal before KILL [default: 5s]' -r
complete -c retry -l replay-stdin-max -d 'The most stdin --replay-stdin takes, such as 64M or 2G (inf: no limit) [default: 1G]' -r
complete -c retry -l hold-max -d 'The most a held attempt\'s file may take (--hold-output, --last-stdout), such as 16M or 1G [default: 64M]' -r
complete -c retry -l on-retry -d 'After a failed attempt, before the wait, run CMD with /bin/sh -c (never after the last attempt)' -r
complete -c retry -l on-give-up -d 'When the run gives up, run CMD with /bin/sh -c, once' -r
complete -c retry -l nested -d 'Inside another retry: multiply attempts (warn), or run COMMAND once' -r -f -a "multiply\t'run every attempt (and warn once that attempts multiply)'
single\t'an inner retry runs COMMAND once'"
complete -c retry -l log-format -d 'Log line format [default: text]' -r -f -a "text\t''
json\t''"
complete -c retry -l log-file -d 'Append the log to PATH instead of stderr' -r -F
complete -c retry -l http -d 'Probe URL over HTTP(S) instead of running a command' -r
complete -c retry -s X -l method -d 'Request method [default: GET, or POST with --data or --json]' -r
complete -c retry -s H -l header -d 'Request header \'Name: value\', or @FILE of header lines (repeatable)' -r
complete -c retry -s d -l data -d 'Form body: the string, or @FILE for a file\'s contents without CR and LF (as curl); repeatable, joined with \'&\'' -r
complete -c retry -l data-binary -d 'As --data, but @FILE is sent byte for byte' -r
complete -c retry -l json -d 'JSON request body: the string, or @FILE; sent with JSON Content-Type and Accept' -r
complete -c retry -l connect-timeout -d 'Time limit for establishing each connection, with --http or --tcp [default: 10s]' -r
complete -c retry -l max-redirs -d 'Redirects to follow in one attempt; more exits 47 (0: do not follow) [default: 10]' -r
complete -c retry -l retry-after-max -d 'Longest wait a server may ask for (Retry-After or a rate-limit field); asking more ends the run [default: 10m]' -r
complete -c retry -l retry-after-spread -d 'After a wait the server asked for (Retry-After or a rate-limit field), spread the next attempt over DUR by the jitter (0: exactly at it) [default: the backoff delay]' -r
complete -c retry -l unix-socket -d 'Connect through this unix socket instead of to the URL\'s host (as curl\'s --unix-socket; Docker\'s API, say)' -r -F
complete -c retry -l cacert -d 'Also trust the CA certificates in this PEM file' -r -F
complete -c retry -s o -l output -d 'Write the accepted response\'s body to FILE instead of stdout' -r -F
complete -c retry -l expect -d 'Statuses that count as success (e.g. 200,204 or 2xx) [default: 2xx]' -r
complete -c retry -l retry-status -d 'Statuses worth retrying, replacing the default 408,429,500,502-504' -r
complete -c retry -l idempotency-key -d 'Send this Idempotency-Key on every attempt (\'auto\': a random UUID), so POST and PATCH may be retried' -r
complete -c retry -l simulate -d 'Simulate N clients that all fail at once under this policy, in virtual time, and report' -r
complete -c retry -l outage -d 'The simulated server fails every request until DUR has passed' -r
complete -c retry -l capacity -d 'The simulated server admits RATE requests a second (a token bucket), rejecting the rest' -r
complete -c retry -l capacity-burst -d 'Requests --capacity admits at once, its bucket\'s depth [default: 100ms worth]' -r
complete -c retry -l fixed-window -d 'The simulated server is a fixed-window rate limiter: LIMIT requests per window of DUR, the rest refused with the time to its reset' -r
complete -c retry -l model -d 'Another server model: occ (each client reads a version, then writes it back; a write fails if another came in between)' -r -f -a "occ\t'optimistic concurrency on one row (the classic backoff simulation)'"
complete -c retry -l format -d 'Report format of the simulation [default: text]' -r -f -a "text\t''
json\t''"
complete -c retry -l plot -d 'Also draw the load and the clients through over time as an SVG picture in FILE' -r -F
complete -c retry -l group -d 'Share pace, budget and breaker with every invocation of the same group' -r
complete -c retry -l state -d 'Where the group\'s state lives: a directory, or redis://, rediss://, unix://, redis+sentinel://, redis+cluster:// [default: ~/.local/state/retry]' -r
complete -c retry -l state-password-file -d 'Read the Redis password from FILE (its first line), not from the URL' -r -F
complete -c retry -l state-cacert -d 'Trust the CA certificates (PEM) in FILE for a rediss:// store' -r -F
complete -c retry -l pace -d 'Start the group\'s retries at no more than RATE, e.g. 20/s or 600/m' -r
complete -c retry -l pace-burst -d 'Retries of the group that may start at once under --pace [default: 1]' -r
complete -c retry -l budget -d 'Stop retrying while the whole group fails: a shared retry budget [default: 100:0.1]' -r
complete -c retry -l breaker -d 'After THRESHOLD failed runs in a row, refuse to run for COOLDOWN (exit 75) [default: 5:30s]' -r
complete -c retry -l metrics-file -d 'Write the run\'s metrics to PATH for node_exporter\'s textfile collector' -r -F
complete -c retry -l metrics-push -d 'Push the run\'s metrics to a Prometheus Pushgateway at URL, e.g. http://pushgateway:9091' -r
complete -c retry -l metrics-push-password-file -d 'Read the Pushgateway\'s password from FILE (its first line), not from the URL' -r -F
complete -c retry -l metrics-job -d 'The metrics\' job label (Pushgateway: grouping key) [default: --group, else COMMAND\'s name, or the mode: http, tcp, file, grpc]' -r
complete -c retry -l metrics-label -d 'Add a label to the metrics (Pushgateway: a grouping key), e.g. instance=$(hostname); repeatable' -r
complete -c retry -l ping -d 'Ping a heartbeat monitor at URL (healthchecks.io protocol)' -r
complete -c retry -l ping-file -d 'Read --ping\'s URL from FILE (its first line), so that it never shows in ps' -r -F
complete -c retry -l report -d 'Write a JSON report of the run to FILE when it ends (attempts, exit status, outcome, times, seed)' -r -F
complete -c retry -l github-output -d 'Append the report as step outputs (key=value lines) to the file GITHUB_OUTPUT names [default: auto]' -r -f -a "auto\t'decide from the surroundings'
always\t''
never\t''"
complete -c retry -l otlp-endpoint -d 'Export the run\'s span and one per attempt to the OTLP/HTTP receiver at URL, e.g. http://localhost:4318' -r
complete -c retry -l trace-context -d 'Whether each attempt gets a trace context of its own (TRACEPARENT; traceparent for --http): on (the default) or off' -r
complete -c retry -l color -d 'Colour retry\'s own log prefix and outcome words [default: auto]' -r -f -a "auto\t'decide from the surroundings'
always\t''
never\t''"
complete -c retry -l ci-annotations -d 'GitHub Actions annotations for failed attempts and giving up [default: auto]' -r -f -a "auto\t'decide from the surroundings'
always\t''
never\t''"
complete -c retry -l tcp -d 'Wait for a TCP port: connect to HOST:PORT (or a unix socket, unix:PATH) instead of running a command (repeatable: every target must accept once)' -r
complete -c retry -l file -d 'Wait for a file: succeed once PATH exists instead of running a command (repeatable: every path must be there once; a path retry may not look at is permanent)' -r -F
complete -c retry -l grpc -d 'Check a gRPC server\'s health (grpc.health.v1.Health/Check) at HOST:PORT instead of running a command: SERVING succeeds, NOT_SERVING is retried, no health service is permanent' -r
complete -c retry -l grpc-service -d 'With --grpc: the service to ask about [default: the server as a whole]' -r
complete -c retry -l grpc-authority -d 'With --grpc: the server\'s name, for its :authority and its TLS certificate, where HOST is an address' -r
complete -c retry -l forever -d 'No attempt limit (still bounded by --max-time)'
complete -c retry -l restart-on-success -d 'Start COMMAND again after a success too, as a service supervisor does; a quick exit still backs off, one up for --reset-after starts from the first step (not with --simulate, whose clients stop at their first success)'
complete -c retry -l no-retry-on-timeout -d 'A timed-out attempt is a permanent failure (with a COMMAND: needs --timeout)'
complete -c retry -l foreground -d 'Run COMMAND in retry\'s own process group (for programs that read the terminal)'
complete -c retry -l replay-stdin -d 'Read stdin once and give every attempt the same bytes'
complete -c retry -l hold-output -d 'Cron mode: hold each attempt\'s stdout and stderr in a temporary file, and write them out only if the run fails or is interrupted'
complete -c retry -l last-stdout -d 'For pipelines and files: stdout carries only the last attempt\'s stdout (the success, or the attempt retry gave up on), never a retried attempt\'s'
complete -c retry -s q -l quiet -d 'Fewer log lines: -q only the final give-up line (and what kept output from being held as asked), -qq nothing'
complete -c retry -s v -l verbose -d 'More log lines: attempt starts and the command line'
complete -c retry -l insecure -d 'Do not verify the server\'s certificate (warned about on every run)'
complete -c retry -l retry-non-idempotent -d 'Retry POST and PATCH even without an idempotency key'
complete -c retry -l compare -d 'Simulate every jitter kind under the same policy and show them side by side'
complete -c retry -l state-required -d 'Exit 125 when the state store cannot be used, instead of running without it'
complete -c retry -l state-show -d 'Print the group\'s pace schedule, budget count and breaker state, and exit'
complete -c retry -l ping-log -d 'Send a summary of the run (attempts, times, the log\'s last lines; masked, at most 10 KB) with the final ping'
complete -c retry -l non-empty -d 'With --file: the file must also be non-empty (a token written whole, say)'
complete -c retry -l directory -d 'With --file: the path must also be a directory'
complete -c retry -l grpc-tls -d 'With --grpc: TLS, with HTTP mode\'s --cacert and --insecure'
complete -c retry -l dry-run -d 'Print the delay schedule this policy produces and run nothing (what acts only on a run is refused with it: hooks, held output, --idle-timeout, the reports)'
complete -c retry -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retry -s V -l version -d 'Print version'
