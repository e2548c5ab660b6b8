"""Resource limits of one sandboxed run, and the isolation modes.

Every limit is enforced by the kernel (rlimits, a private tmpfs) or by the
parent (wall clock, output bytes), never by the sandboxed code itself.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

MiB = 1024 * 1024

IsolationMode = Literal["auto", "root", "userns", "rlimits"]
"""auto: `root` when running as root, else `userns`.
root: namespaces (mount, network, pid, ipc, uts) + a fresh unprivileged uid.
userns: the same namespaces inside an unprivileged user namespace, capabilities dropped.
rlimits: no namespaces; process group, rlimits and (as root) a fresh uid only.
A namespace mode that the host refuses falls back to `rlimits` unless `strict`."""


@dataclass(frozen=True)
class Limits:
    """Bounds of one run. Defaults suit short test programs; callers size them per job."""

    wall_seconds: float = 10.0  # whole run, interpreter start included; parent kills the group after it
    cpu_seconds: int = 10  # RLIMIT_CPU of each process (SIGKILL at the limit)
    memory_bytes: int = 1024 * MiB  # RLIMIT_AS and RLIMIT_DATA of each process
    stack_bytes: int | None = None  # RLIMIT_STACK; None keeps the inherited limit
    max_processes: int = 16  # RLIMIT_NPROC: processes + threads of the sandbox's own uid
    max_output_bytes: int = 4 * MiB  # stdout beyond this kills the run (output_exceeded)
    max_stderr_bytes: int = 64 * 1024  # stderr kept; the rest is discarded (never blocks the child)
    max_file_bytes: int = 16 * MiB  # RLIMIT_FSIZE: largest file the program may write
    max_open_files: int = 256  # RLIMIT_NOFILE
    tmp_bytes: int = 64 * MiB  # size of each private tmpfs (/tmp, /var/tmp, /dev/shm)
    mode: IsolationMode = "auto"
    strict: bool = False  # refuse to run (error) instead of falling back to `rlimits`
    hash_seed: int | None = 0  # PYTHONHASHSEED of the child: set/dict orders are reproducible

    def __post_init__(self) -> None:
        for name in ("wall_seconds", "cpu_seconds", "memory_bytes", "max_processes", "max_output_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"sandbox limit {name} must be positive, got {getattr(self, name)!r}")
        if self.mode not in ("auto", "root", "userns", "rlimits"):
            raise ValueError(f"unknown sandbox mode {self.mode!r}; valid: auto, root, userns, rlimits")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
