module completions {

  def "nu-complete retry backoff" [] {
    [ "exponential" "linear" "fixed" ]
  }

  def "nu-complete retry jitter" [] {
    [ "none" "full" "equal" "decorrelated" "additive" ]
  }

  def "nu-complete retry nested" [] {
    [ "multiply" "single" ]
  }

  def "nu-complete retry log_format" [] {
    [ "text" "json" ]
  }

  def "nu-complete retry model" [] {
    [ "occ" ]
  }

  def "nu-complete retry format" [] {
    [ "text" "json" ]
  }

  def "nu-complete retry github_output" [] {
    [ "auto" "always" "never" ]
  }

  def "nu-complete retry color" [] {
    [ "auto" "always" "never" ]
  }

  def "nu-complete retry ci_annotations" [] {
    [ "auto" "always" "never" ]
  }

  # Run a command and retry it with capped exponential backoff and jitter
  export extern retry [
    --max(-n): string         # Attempts in total, the first included, N >= 1 [default: 5; none with --max-time alone]
    --forever                 # No attempt limit (still bounded by --max-time)
    --backoff: string@"nu-complete retry backoff" # How the delay ceiling grows: exponential, linear or fixed [default: exponential]
    --base(-b): string        # First delay ceiling; above 30s it also raises the default cap [default: 1s]
    --cap(-c): string         # Largest single delay, at least --base [default: 30s, or --base if longer]
    --multiplier(-m): string  # Growth factor of --backoff exponential, X >= 1 [default: 2]
    --jitter(-j): string@"nu-complete retry jitter" # Randomisation of each delay [default: full]
    --jitter-max: string      # Largest random addition for --jitter additive, at most --cap [default: 1s]
    --max-time: string        # Overall deadline from start: no sleep or attempt runs past it; without --max, no attempt limit (0 or inf: none)
    --timeout(-t): string     # Per-attempt time limit; the attempt's process group is then stopped (0 or inf: none)
    --idle-timeout: string    # Stop an attempt after DUR without progress: no byte received (HTTP mode), or nothing written to stdout or stderr by COMMAND (0 or inf: none) [default: 30s in HTTP mode, none for a COMMAND]
    --reset-after: string     # An attempt that ran at least DUR before failing resets the backoff
    --restart-on-success      # Start COMMAND again after a success too, as a service supervisor does; a quick exit still backs off, one up for --reset-after starts from the first step (not with --simulate, whose clients stop at their first success)
    --stagger: string         # Wait a random time from 0 to DUR before the first attempt, so that a fleet started at the same moment (one cron minute) does not start in step
    --seed: string            # Seed for the jitter RNG, 0 to 2^53-1: the same schedule on every platform and version [default: from the OS]
    --retry-on: string        # Only these exit codes are retryable (e.g. 1,75,100-110)
    --stop-on: string         # These exit codes are permanent failures: stop at once
    --success-on: string      # These exit codes count as success
    --retry-if-output: string # Retry a failure whose stdout or stderr has a line matching REGEX, whatever its exit code (repeatable)
    --stop-if-output: string  # Never retry a failure whose stdout or stderr has a line matching REGEX (repeatable; wins over --retry-if-output)
    --no-retry-on-timeout     # A timed-out attempt is a permanent failure (with a COMMAND: needs --timeout)
    --stop-signal: string     # Signal sent to the attempt's process group on timeout: a name or number as 'kill -l' lists, such as INT, SIGUSR1 or RTMIN+2 [default: TERM]
    --kill-after(-k): string  # Grace period after the stop signal before KILL [default: 5s]
    --foreground              # Run COMMAND in retry's own process group (for programs that read the terminal)
    --replay-stdin            # Read stdin once and give every attempt the same bytes
    --replay-stdin-max: string # The most stdin --replay-stdin takes, such as 64M or 2G (inf: no limit) [default: 1G]
    --hold-output             # Cron mode: hold each attempt's stdout and stderr in a temporary file, and write them out only if the run fails or is interrupted
    --last-stdout             # For pipelines and files: stdout carries only the last attempt's stdout (the success, or the attempt retry gave up on), never a retried attempt's
    --hold-max: string        # The most a held attempt's file may take (--hold-output, --last-stdout), such as 16M or 1G [default: 64M]
    --on-retry: string        # After a failed attempt, before the wait, run CMD with /bin/sh -c (never after the last attempt)
    --on-give-up: string      # When the run gives up, run CMD with /bin/sh -c, once
    --nested: string@"nu-complete retry nested" # Inside another retry: multiply attempts (warn), or run COMMAND once
    --quiet(-q)               # Fewer log lines: -q only the final give-up line (and what kept output from being held as asked), -qq nothing
    --verbose(-v)             # More log lines: attempt starts and the command line
    --log-format: string@"nu-complete retry log_format" # Log line format [default: text]
    --log-file: path          # Append the log to PATH instead of stderr
    --http: string            # Probe URL over HTTP(S) instead of running a command
    --method(-X): string      # Request method [default: GET, or POST with --data or --json]
    --header(-H): string      # Request header 'Name: value', or @FILE of header lines (repeatable)
    --data(-d): string        # Form body: the string, or @FILE for a file's contents without CR and LF (as curl); repeatable, joined with '&'
    --data-binary: string     # As --data, but @FILE is sent byte for byte
    --json: string            # JSON request body: the string, or @FILE; sent with JSON Content-Type and Accept
    --connect-timeout: string # Time limit for establishing each connection, with --http or --tcp [default: 10s]
    --max-redirs: string      # Redirects to follow in one attempt; more exits 47 (0: do not follow) [default: 10]
    --retry-after-max: string # Longest wait a server may ask for (Retry-After or a rate-limit field); asking more ends the run [default: 10m]
    --retry-after-spread: string # After a wait the server asked for (Retry-After or a rate-limit field), spread the next attempt over DUR by the jitter (0: exactly at it) [default: the backoff delay]
    --unix-socket: path       # Connect through this unix socket instead of to the URL's host (as curl's --unix-socket; Docker's API, say)
    --cacert: path            # Also trust the CA certificates in this PEM file
    --insecure                # Do not verify the server's certificate (warned about on every run)
    --output(-o): path        # Write the accepted response's body to FILE instead of stdout
    --expect: string          # Statuses that count as success (e.g. 200,204 or 2xx) [default: 2xx]
    --retry-status: string    # Statuses worth retrying, replacing the default 408,429,500,502-504
    --idempotency-key: string # Send this Idempotency-Key on every attempt ('auto': a random UUID), so POST and PATCH may be retried
    --retry-non-idempotent    # Retry POST and PATCH even without an idempotency key
    --simulate: string        # Simulate N clients that all fail at once under this policy, in virtual time, and report
    --outage: string          # The simulated server fails every request until DUR has passed
    --capacity: string        # The simulated server admits RATE requests a second (a token bucket), rejecting the rest
    --capacity-burst: string  # Requests --capacity admits at once, its bucket's depth [default: 100ms worth]
    --fixed-window: string    # The simulated server is a fixed-window rate limiter: LIMIT requests per window of DUR, the rest refused with the time to its reset
    --model: string@"nu-complete retry model" # Another server model: occ (each client reads a version, then writes it back; a write fails if another came in between)
    --compare                 # Simulate every jitter kind under the same policy and show them side by side
    --format: string@"nu-complete retry format" # Report format of the simulation [default: text]
    --plot: path              # Also draw the load and the clients through over time as an SVG picture in FILE
    --group: string           # Share pace, budget and breaker with every invocation of the same group
    --state: string           # Where the group's state lives: a directory, or redis://, rediss://, unix://, redis+sentinel://, redis+cluster:// [default: ~/.local/state/retry]
    --state-password-file: path # Read the Redis password from FILE (its first line), not from the URL
    --state-cacert: path      # Trust the CA certificates (PEM) in FILE for a rediss:// store
    --state-required          # Exit 125 when the state store cannot be used, instead of running without it
    --state-show              # Print the group's pace schedule, budget count and breaker state, and exit
    --pace: string            # Start the group's retries at no more than RATE, e.g. 20/s or 600/m
    --pace-burst: string      # Retries of the group that may start at once under --pace [default: 1]
    --budget: string          # Stop retrying while the whole group fails: a shared retry budget [default: 100:0.1]
    --breaker: string         # After THRESHOLD failed runs in a row, refuse to run for COOLDOWN (exit 75) [default: 5:30s]
    --metrics-file: path      # Write the run's metrics to PATH for node_exporter's textfile collector
    --metrics-push: string    # Push the run's metrics to a Prometheus Pushgateway at URL, e.g. http://pushgateway:9091
    --metrics-push-password-file: path # Read the Pushgateway's password from FILE (its first line), not from the URL
    --metrics-job: string     # The metrics' job label (Pushgateway: grouping key) [default: --group, else COMMAND's name, or the mode: http, tcp, file, grpc]
    --metrics-label: string   # Add a label to the metrics (Pushgateway: a grouping key), e.g. instance=$(hostname); repeatable
    --ping: string            # Ping a heartbeat monitor at URL (healthchecks.io protocol)
    --ping-file: path         # Read --ping's URL from FILE (its first line), so that it never shows in ps
    --ping-log                # Send a summary of the run (attempts, times, the log's last lines; masked, at most 10 KB) with the final ping
    --report: path            # Write a JSON report of the run to FILE when it ends (attempts, exit status, outcome, times, seed)
    --github-output: string@"nu-complete retry github_output" # Append the report as step outputs (key=value lines) to the file GITHUB_OUTPUT names [default: auto]
    --otlp-endpoint: string   # Export the run's span and one per attempt to the OTLP/HTTP receiver at URL, e.g. http://localhost:4318
    --trace-context: string   # Whether each attempt gets a trace context of its own (TRACEPARENT; traceparent for --http): on (the default) or off
    --color: string@"nu-complete retry color" # Colour retry's own log prefix and outcome words [default: auto]
    --ci-annotations: string@"nu-complete retry ci_annotations" # GitHub Actions annotations for failed attempts and giving up [default: auto]
    --tcp: string             # Wait for a TCP port: connect to HOST:PORT (or a unix socket, unix:PATH) instead of running a command (repeatable: every target must accept once)
    --file: path              # Wait for a file: succeed once PATH exists instead of running a command (repeatable: every path must be there once; a path retry may not look at is permanent)
    --non-empty               # With --file: the file must also be non-empty (a token written whole, say)
    --directory               # With --file: the path must also be a directory
    --grpc: string            # Check a gRPC server's health (grpc.health.v1.Health/Check) at HOST:PORT instead of running a command: SERVING succeeds, NOT_SERVING is retried, no health service is permanent
    --grpc-service: string    # With --grpc: the service to ask about [default: the server as a whole]
    --grpc-tls                # With --grpc: TLS, with HTTP mode's --cacert and --insecure
    --grpc-authority: string  # With --grpc: the server's name, for its :authority and its TLS certificate, where HOST is an address
    --dry-run                 # Print the delay schedule this policy produces and run nothing (what acts only on a run is refused with it: hooks, held output, --idle-timeout, the reports)
    --help(-h)                # Print help (see more with '--help')
    --version(-V)             # Print version
    ...command: string        # The command to run, and its arguments
  ]

}

export use completions *
