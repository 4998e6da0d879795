"""Where cargo puts retry's release binaries.

`cargo build --release` gives the default build at target/release/retry.
The static opt-in (`cargo build --release --config build/static.toml`)
builds for the host as a named target, so it lands in
target/<host tuple>/release/retry.
"""

import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATIC_CONFIG = os.path.join(REPO, "build", "static.toml")


def host_tuple():
    """The host's target tuple, as rustc names it."""
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True)
    for line in out.stdout.splitlines():
        if line.startswith("host: "):
            return line.split(" ", 1)[1].strip()
    raise SystemExit("rustc -vV did not name the host")


def target_dir():
    return os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target")


def release_binary(name="retry"):
    """The default release binary of this repository (not checked to exist)."""
    return os.path.join(target_dir(), "release", name)


def static_binary(name="retry"):
    """The static opt-in build's binary (not checked to exist)."""
    return os.path.join(target_dir(), host_tuple(), "release", name)
