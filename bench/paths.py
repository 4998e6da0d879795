"""Where cargo puts retry's release binary.

The repository's .cargo/config.toml builds for the host as a named target,
so binaries land in target/<host tuple>/release/, not target/release/.
"""

import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def host_tuple():
    """The host's target tuple, as rustc names it."""
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True)
    for line in out.stdout.splitlines():
        if line.startswith("host: "):
            return line.split(" ", 1)[1].strip()
    raise SystemExit("rustc -vV did not name the host")


def release_binary(name="retry"):
    """The path of a release binary of this repository (not checked to exist)."""
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target")
    return os.path.join(target, host_tuple(), "release", name)
