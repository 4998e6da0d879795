
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'retry' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'retry'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'retry' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Attempts in total, the first included, N >= 1 [default: 5; none with --max-time alone]')
            [CompletionResult]::new('--max', '--max', [CompletionResultType]::ParameterName, 'Attempts in total, the first included, N >= 1 [default: 5; none with --max-time alone]')
            [CompletionResult]::new('--backoff', '--backoff', [CompletionResultType]::ParameterName, 'How the delay ceiling grows: exponential, linear or fixed [default: exponential]')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'First delay ceiling; above 30s it also raises the default cap [default: 1s]')
            [CompletionResult]::new('--base', '--base', [CompletionResultType]::ParameterName, 'First delay ceiling; above 30s it also raises the default cap [default: 1s]')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Largest single delay, at least --base [default: 30s, or --base if longer]')
            [CompletionResult]::new('--cap', '--cap', [CompletionResultType]::ParameterName, 'Largest single delay, at least --base [default: 30s, or --base if longer]')
            [CompletionResult]::new('-m', '-m', [CompletionResultType]::ParameterName, 'Growth factor of --backoff exponential, X >= 1 [default: 2]')
            [CompletionResult]::new('--multiplier', '--multiplier', [CompletionResultType]::ParameterName, 'Growth factor of --backoff exponential, X >= 1 [default: 2]')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'Randomisation of each delay [default: full]')
            [CompletionResult]::new('--jitter', '--jitter', [CompletionResultType]::ParameterName, 'Randomisation of each delay [default: full]')
            [CompletionResult]::new('--jitter-max', '--jitter-max', [CompletionResultType]::ParameterName, 'Largest random addition for --jitter additive, at most --cap [default: 1s]')
            [CompletionResult]::new('--max-time', '--max-time', [CompletionResultType]::ParameterName, 'Overall deadline from start: no sleep or attempt runs past it; without --max, no attempt limit (0 or inf: none)')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Per-attempt time limit; the attempt''s process group is then stopped (0 or inf: none)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Per-attempt time limit; the attempt''s process group is then stopped (0 or inf: none)')
            [CompletionResult]::new('--idle-timeout', '--idle-timeout', [CompletionResultType]::ParameterName, 'Stop an attempt after DUR without progress: no byte received (HTTP mode), or nothing written to stdout or stderr by COMMAND (0 or inf: none) [default: 30s in HTTP mode, none for a COMMAND]')
            [CompletionResult]::new('--reset-after', '--reset-after', [CompletionResultType]::ParameterName, 'An attempt that ran at least DUR before failing resets the backoff')
            [CompletionResult]::new('--stagger', '--stagger', [CompletionResultType]::ParameterName, 'Wait a random time from 0 to DUR before the first attempt, so that a fleet started at the same moment (one cron minute) does not start in step')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Seed for the jitter RNG, 0 to 2^53-1: the same schedule on every platform and version [default: from the OS]')
            [CompletionResult]::new('--retry-on', '--retry-on', [CompletionResultType]::ParameterName, 'Only these exit codes are retryable (e.g. 1,75,100-110)')
            [CompletionResult]::new('--stop-on', '--stop-on', [CompletionResultType]::ParameterName, 'These exit codes are permanent failures: stop at once')
            [CompletionResult]::new('--success-on', '--success-on', [CompletionResultType]::ParameterName, 'These exit codes count as success')
            [CompletionResult]::new('--retry-if-output', '--retry-if-output', [CompletionResultType]::ParameterName, 'Retry a failure whose stdout or stderr has a line matching REGEX, whatever its exit code (repeatable)')
            [CompletionResult]::new('--stop-if-output', '--stop-if-output', [CompletionResultType]::ParameterName, 'Never retry a failure whose stdout or stderr has a line matching REGEX (repeatable; wins over --retry-if-output)')
            [CompletionResult]::new('--stop-signal', '--stop-signal', [CompletionResultType]::ParameterName, 'Signal sent to the attempt''s process group on timeout: a name or number as ''kill -l'' lists, such as INT, SIGUSR1 or RTMIN+2 [default: TERM]')
            [CompletionResult]::new('-k', '-k', [CompletionResultType]::ParameterName, 'Grace period after the stop signal before KILL [default: 5s]')
            [CompletionResult]::new('--kill-after', '--kill-after', [CompletionResultType]::ParameterName, 'Grace period after the stop signal before KILL [default: 5s]')
            [CompletionResult]::new('--replay-stdin-max', '--replay-stdin-max', [CompletionResultType]::ParameterName, 'The most stdin --replay-stdin takes, such as 64M or 2G (inf: no limit) [default: 1G]')
            [CompletionResult]::new('--hold-max', '--hold-max', [CompletionResultType]::ParameterName, 'The most a held attempt''s file may take (--hold-output, --last-stdout), such as 16M or 1G [default: 64M]')
            [CompletionResult]::new('--on-retry', '--on-retry', [CompletionResultType]::ParameterName, 'After a failed attempt, before the wait, run CMD with /bin/sh -c (never after the last attempt)')
            [CompletionResult]::new('--on-give-up', '--on-give-up', [CompletionResultType]::ParameterName, 'When the run gives up, run CMD with /bin/sh -c, once')
            [CompletionResult]::new('--nested', '--nested', [CompletionResultType]::ParameterName, 'Inside another retry: multiply attempts (warn), or run COMMAND once')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log line format [default: text]')
            [CompletionResult]::new('--log-file', '--log-file', [CompletionResultType]::ParameterName, 'Append the log to PATH instead of stderr')
            [CompletionResult]::new('--http', '--http', [CompletionResultType]::ParameterName, 'Probe URL over HTTP(S) instead of running a command')
            [CompletionResult]::new('-X', '-X ', [CompletionResultType]::ParameterName, 'Request method [default: GET, or POST with --data or --json]')
            [CompletionResult]::new('--method', '--method', [CompletionResultType]::ParameterName, 'Request method [default: GET, or POST with --data or --json]')
            [CompletionResult]::new('-H', '-H ', [CompletionResultType]::ParameterName, 'Request header ''Name: value'', or @FILE of header lines (repeatable)')
            [CompletionResult]::new('--header', '--header', [CompletionResultType]::ParameterName, 'Request header ''Name: value'', or @FILE of header lines (repeatable)')
            [CompletionResult]::new('-d', '-d', [CompletionResultType]::ParameterName, 'Form body: the string, or @FILE for a file''s contents without CR and LF (as curl); repeatable, joined with ''&''')
            [CompletionResult]::new('--data', '--data', [CompletionResultType]::ParameterName, 'Form body: the string, or @FILE for a file''s contents without CR and LF (as curl); repeatable, joined with ''&''')
            [CompletionResult]::new('--data-binary', '--data-binary', [CompletionResultType]::ParameterName, 'As --data, but @FILE is sent byte for byte')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'JSON request body: the string, or @FILE; sent with JSON Content-Type and Accept')
            [CompletionResult]::new('--connect-timeout', '--connect-timeout', [CompletionResultType]::ParameterName, 'Time limit for establishing each connection, with --http or --tcp [default: 10s]')
            [CompletionResult]::new('--max-redirs', '--max-redirs', [CompletionResultType]::ParameterName, 'Redirects to follow in one attempt; more exits 47 (0: do not follow) [default: 10]')
            [CompletionResult]::new('--retry-after-max', '--retry-after-max', [CompletionResultType]::ParameterName, 'Longest wait a server may ask for (Retry-After or a rate-limit field); asking more ends the run [default: 10m]')
            [CompletionResult]::new('--retry-after-spread', '--retry-after-spread', [CompletionResultType]::ParameterName, 'After a wait the server asked for (Retry-After or a rate-limit field), spread the next attempt over DUR by the jitter (0: exactly at it) [default: the backoff delay]')
            [CompletionResult]::new('--unix-socket', '--unix-socket', [CompletionResultType]::ParameterName, 'Connect through this unix socket instead of to the URL''s host (as curl''s --unix-socket; Docker''s API, say)')
            [CompletionResult]::new('--cacert', '--cacert', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Write the accepted response''s body to FILE instead of stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Write the accepted response''s body to FILE instead of stdout')
            [CompletionResult]::new('--expect', '--expect', [CompletionResultType]::ParameterName, 'Statuses that count as success (e.g. 200,204 or 2xx) [default: 2xx]')
            [CompletionResult]::new('--retry-status', '--retry-status', [CompletionResultType]::ParameterName, 'Statuses worth retrying, replacing the default 408,429,500,502-504')
            [CompletionResult]::new('--idempotency-key', '--idempotency-key', [CompletionResultType]::ParameterName, 'Send this Idempotency-Key on every attempt (''auto'': a random UUID), so POST and PATCH may be retried')
            [CompletionResult]::new('--simulate', '--simulate', [CompletionResultType]::ParameterName, 'Simulate N clients that all fail at once under this policy, in virtual time, and report')
            [CompletionResult]::new('--outage', '--outage', [CompletionResultType]::ParameterName, 'The simulated server fails every request until DUR has passed')
            [CompletionResult]::new('--capacity', '--capacity', [CompletionResultType]::ParameterName, 'The simulated server admits RATE requests a second (a token bucket), rejecting the rest')
            [CompletionResult]::new('--capacity-burst', '--capacity-burst', [CompletionResultType]::ParameterName, 'Requests --capacity admits at once, its bucket''s depth [default: 100ms worth]')
            [CompletionResult]::new('--fixed-window', '--fixed-window', [CompletionResultType]::ParameterName, 'The simulated server is a fixed-window rate limiter: LIMIT requests per window of DUR, the rest refused with the time to its reset')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'Another server model: occ (each client reads a version, then writes it back; a write fails if another came in between)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Report format of the simulation [default: text]')
            [CompletionResult]::new('--plot', '--plot', [CompletionResultType]::ParameterName, 'Also draw the load and the clients through over time as an SVG picture in FILE')
            [CompletionResult]::new('--group', '--group', [CompletionResultType]::ParameterName, 'Share pace, budget and breaker with every invocation of the same group')
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'Where the group''s state lives: a directory, or redis://, rediss://, unix://, redis+sentinel://, redis+cluster:// [default: ~/.local/state/retry]')
            [CompletionResult]::new('--state-password-file', '--state-password-file', [CompletionResultType]::ParameterName, 'Read the Redis password from FILE (its first line), not from the URL')
            [CompletionResult]::new('--state-cacert', '--state-cacert', [CompletionResultType]::ParameterName, 'Trust the CA certificates (PEM) in FILE for a rediss:// store')
            [CompletionResult]::new('--pace', '--pace', [CompletionResultType]::ParameterName, 'Start the group''s retries at no more than RATE, e.g. 20/s or 600/m')
            [CompletionResult]::new('--pace-burst', '--pace-burst', [CompletionResultType]::ParameterName, 'Retries of the group that may start at once under --pace [default: 1]')
            [CompletionResult]::new('--budget', '--budget', [CompletionResultType]::ParameterName, 'Stop retrying while the whole group fails: a shared retry budget [default: 100:0.1]')
            [CompletionResult]::new('--breaker', '--breaker', [CompletionResultType]::ParameterName, 'After THRESHOLD failed runs in a row, refuse to run for COOLDOWN (exit 75) [default: 5:30s]')
            [CompletionResult]::new('--metrics-file', '--metrics-file', [CompletionResultType]::ParameterName, 'Write the run''s metrics to PATH for node_exporter''s textfile collector')
            [CompletionResult]::new('--metrics-push', '--metrics-push', [CompletionResultType]::ParameterName, 'Push the run''s metrics to a Prometheus Pushgateway at URL, e.g. http://pushgateway:9091')
            [CompletionResult]::new('--metrics-push-password-file', '--metrics-push-password-file', [CompletionResultType]::ParameterName, 'Read the Pushgateway''s password from FILE (its first line), not from the URL')
            [CompletionResult]::new('--metrics-job', '--metrics-job', [CompletionResultType]::ParameterName, 'The metrics'' job label (Pushgateway: grouping key) [default: --group, else COMMAND''s name, or the mode: http, tcp, file, grpc]')
            [CompletionResult]::new('--metrics-label', '--metrics-label', [CompletionResultType]::ParameterName, 'Add a label to the metrics (Pushgateway: a grouping key), e.g. instance=$(hostname); repeatable')
            [CompletionResult]::new('--ping', '--ping', [CompletionResultType]::ParameterName, 'Ping a heartbeat monitor at URL (healthchecks.io protocol)')
            [CompletionResult]::new('--ping-file', '--ping-file', [CompletionResultType]::ParameterName, 'Read --ping''s URL from FILE (its first line), so that it never shows in ps')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Write a JSON report of the run to FILE when it ends (attempts, exit status, outcome, times, seed)')
            [CompletionResult]::new('--github-output', '--github-output', [CompletionResultType]::ParameterName, 'Append the report as step outputs (key=value lines) to the file GITHUB_OUTPUT names [default: auto]')
            [CompletionResult]::new('--otlp-endpoint', '--otlp-endpoint', [CompletionResultType]::ParameterName, 'Export the run''s span and one per attempt to the OTLP/HTTP receiver at URL, e.g. http://localhost:4318')
            [CompletionResult]::new('--trace-context', '--trace-context', [CompletionResultType]::ParameterName, 'Whether each attempt gets a trace context of its own (TRACEPARENT; traceparent for --http): on (the default) or off')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour retry''s own log prefix and outcome words [default: auto]')
            [CompletionResult]::new('--ci-annotations', '--ci-annotations', [CompletionResultType]::ParameterName, 'GitHub Actions annotations for failed attempts and giving up [default: auto]')
            [CompletionResult]::new('--tcp', '--tcp', [CompletionResultType]::ParameterName, 'Wait for a TCP port: connect to HOST:PORT (or a unix socket, unix:PATH) instead of running a command (repeatable: every target must accept once)')
            [CompletionResult]::new('--file', '--file', [CompletionResultType]::ParameterName, 'Wait for a file: succeed once PATH exists instead of running a command (repeatable: every path must be there once; a path retry may not look at is permanent)')
            [CompletionResult]::new('--grpc', '--grpc', [CompletionResultType]::ParameterName, 'Check a gRPC server''s health (grpc.health.v1.Health/Check) at HOST:PORT instead of running a command: SERVING succeeds, NOT_SERVING is retried, no health service is permanent')
            [CompletionResult]::new('--grpc-service', '--grpc-service', [CompletionResultType]::ParameterName, 'With --grpc: the service to ask about [default: the server as a whole]')
            [CompletionResult]::new('--grpc-authority', '--grpc-authority', [CompletionResultType]::ParameterName, 'With --grpc: the server''s name, for its :authority and its TLS certificate, where HOST is an address')
            [CompletionResult]::new('--forever', '--forever', [CompletionResultType]::ParameterName, 'No attempt limit (still bounded by --max-time)')
            [CompletionResult]::new('--restart-on-success', '--restart-on-success', [CompletionResultType]::ParameterName, 'Start COMMAND again after a success too, as a service supervisor does; a quick exit still backs off, one up for --reset-after starts from the first step (not with --simulate, whose clients stop at their first success)')
            [CompletionResult]::new('--no-retry-on-timeout', '--no-retry-on-timeout', [CompletionResultType]::ParameterName, 'A timed-out attempt is a permanent failure (with a COMMAND: needs --timeout)')
            [CompletionResult]::new('--foreground', '--foreground', [CompletionResultType]::ParameterName, 'Run COMMAND in retry''s own process group (for programs that read the terminal)')
            [CompletionResult]::new('--replay-stdin', '--replay-stdin', [CompletionResultType]::ParameterName, 'Read stdin once and give every attempt the same bytes')
            [CompletionResult]::new('--hold-output', '--hold-output', [CompletionResultType]::ParameterName, 'Cron mode: hold each attempt''s stdout and stderr in a temporary file, and write them out only if the run fails or is interrupted')
            [CompletionResult]::new('--last-stdout', '--last-stdout', [CompletionResultType]::ParameterName, 'For pipelines and files: stdout carries only the last attempt''s stdout (the success, or the attempt retry gave up on), never a retried attempt''s')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Fewer log lines: -q only the final give-up line (and what kept output from being held as asked), -qq nothing')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Fewer log lines: -q only the final give-up line (and what kept output from being held as asked), -qq nothing')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log lines: attempt starts and the command line')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log lines: attempt starts and the command line')
            [CompletionResult]::new('--insecure', '--insecure', [CompletionResultType]::ParameterName, 'Do not verify the server''s certificate (warned about on every run)')
            [CompletionResult]::new('--retry-non-idempotent', '--retry-non-idempotent', [CompletionResultType]::ParameterName, 'Retry POST and PATCH even without an idempotency key')
            [CompletionResult]::new('--compare', '--compare', [CompletionResultType]::ParameterName, 'Simulate every jitter kind under the same policy and show them side by side')
            [CompletionResult]::new('--state-required', '--state-required', [CompletionResultType]::ParameterName, 'Exit 125 when the state store cannot be used, instead of running without it')
            [CompletionResult]::new('--state-show', '--state-show', [CompletionResultType]::ParameterName, 'Print the group''s pace schedule, budget count and breaker state, and exit')
            [CompletionResult]::new('--ping-log', '--ping-log', [CompletionResultType]::ParameterName, 'Send a summary of the run (attempts, times, the log''s last lines; masked, at most 10 KB) with the final ping')
            [CompletionResult]::new('--non-empty', '--non-empty', [CompletionResultType]::ParameterName, 'With --file: the file must also be non-empty (a token written whole, say)')
            [CompletionResult]::new('--directory', '--directory', [CompletionResultType]::ParameterName, 'With --file: the path must also be a directory')
            [CompletionResult]::new('--grpc-tls', '--grpc-tls', [CompletionResultType]::ParameterName, 'With --grpc: TLS, with HTTP mode''s --cacert and --insecure')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Print the delay schedule this policy produces and run nothing (what acts only on a run is refused with it: hooks, held output, --idle-timeout, the reports)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
