"""Child side of the sandbox: isolate as far as the host allows, then run the program.

Started by `aecg_bench.sandbox.runner` as `python -s -P -B bootstrap.py`. Stdin
begins with a header (`<n>\\n` + n bytes of JSON config); the rest of stdin
belongs to the program. It is stdlib-only and imports nothing from the
project, because after the privilege drop the project may not be readable.

Process layout in the namespace modes (`root`, `userns`):

    bootstrap  (host pid namespace; waits and mirrors init's exit code)
      init     (pid 1 of new mount/net/pid/ipc/uts namespaces; mounts; reaps;
                reports the program's exit status)
        program (rlimits; drops to the fresh uid, or drops all capabilities
                 in `userns`; runs the code in its private /tmp/work)

When init exits the kernel kills everything left in its pid namespace, so a
program cannot leave processes behind. Mounts: everything inherited is
remounted read-only in the private mount namespace (never the host's: each
remount is a per-mount bind remount, after the tree was made private), fresh
size-limited tmpfs on /tmp, /var/tmp and /dev/shm, a fresh /proc, and
directories the unprivileged uid cannot traverse (e.g. a Python installed under
a 0700 /root) are covered by a tmpfs in which only the interpreter's own
directories are bind-mounted back. The network namespace has only a loopback
interface, which is down: no socket can reach anything.

In `rlimits` mode (namespaces refused) there is no fork: the bootstrap itself
becomes the program after setting rlimits and, as root, switching to the fresh
uid. The report written to `report_fd` says which measures took effect.
"""

from __future__ import annotations

import builtins
import contextlib
import ctypes
import json
import os
import resource
import signal
import stat
import sys
import types

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 1 << 18, 1 << 21, 1 << 24
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 24, 38
_MOUNT_OPTION_FLAGS = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
    "strictatime": MS_STRICTATIME,
}
_libc = ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _c(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(_libc.mount(_c(source), _c(target), _c(fstype), ctypes.c_ulong(flags), _c(data)), f"mount {target}")


def _prctl(option: int, arg: int) -> None:
    zero = ctypes.c_ulong(0)
    _check(_libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg), zero, zero, zero), f"prctl {option}")


def _read_header() -> dict:
    """The config, read byte-exactly from fd 0 so the program's stdin stays untouched."""
    line = b""
    while not line.endswith(b"\n"):
        ch = os.read(0, 1)
        if not ch or len(line) > 20:
            raise SystemExit("sandbox bootstrap: no config header on stdin")
        line += ch
    size, buf = int(line), bytearray()
    while len(buf) < size:
        chunk = os.read(0, size - len(buf))
        if not chunk:
            raise SystemExit("sandbox bootstrap: truncated config header")
        buf += chunk
    return json.loads(buf)


def _report(cfg: dict, record: dict) -> None:
    os.write(cfg["report_fd"], (json.dumps(record) + "\n").encode())


# ---------------------------------------------------------------------------
# namespaces and mounts (init, as root of its mount namespace)


def _enter_namespaces(userns: bool) -> None:
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
    _check(_libc.unshare(ctypes.c_int(flags | (CLONE_NEWUSER if userns else 0))), "unshare")
    if userns:  # map our own uid/gid to root of the new user namespace (allowed unprivileged)
        with open("/proc/self/setgroups", "w") as fh:
            fh.write("deny")
        with open("/proc/self/uid_map", "w") as fh:
            fh.write(f"0 {uid} 1")
        with open("/proc/self/gid_map", "w") as fh:
            fh.write(f"0 {gid} 1")


def _mountinfo() -> list[tuple[str, int, bool]]:
    """(mount point, per-mount flags to keep, read-only?) of every mount, parents first."""
    out = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")
            options = fields[5].split(",")
            keep = 0
            for opt in options:
                keep |= _MOUNT_OPTION_FLAGS.get(opt, 0)
            out.append((point, keep, "ro" in options))
    return out


def _remount_readonly(facts: dict) -> None:
    """Bind-remount every inherited mount read-only (per-mount flag in our namespace only)."""
    failed = []
    for point, keep, already_ro in _mountinfo():
        if already_ro:
            continue
        try:
            _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | keep)
        except OSError:
            failed.append(point)
    facts["readonly_root"] = "/" not in failed
    facts["readonly_failed"] = failed[:20]


def _blocked_ancestor(path: str) -> str | None:
    """The highest directory above `path` that other users cannot traverse, if any."""
    current = ""
    for part in os.path.dirname(path).strip("/").split("/"):
        if not part:
            continue
        current += "/" + part
        if not os.stat(current).st_mode & stat.S_IXOTH:
            return current
    return None


def _setup_mounts(cfg: dict, host_mnt_ns: str, facts: dict) -> str:
    """Private, read-only view of the host plus private tmpfs; returns the work dir.

    Directories the program needs (the interpreter's) that end up hidden, under
    a private tmpfs or below a directory other users cannot traverse, are
    opened first and bind-mounted back (read-only) at the same path.
    """
    if os.readlink("/proc/self/ns/mnt") == host_mnt_ns:  # never touch the host's mounts
        raise OSError("mount namespace was not created")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _remount_readonly(facts)
    tmp_dirs = [d for d in ("/tmp", "/var/tmp", "/dev/shm") if os.path.isdir(d)]
    needed = sorted({os.path.realpath(p) for p in cfg["expose"] if os.path.isdir(p)})
    blocked = {p: a for p in needed if (a := _blocked_ancestor(p))}
    hidden = [p for p in needed if p in blocked or any(p.startswith(t + "/") for t in tmp_dirs)]
    handles = [(p, os.open(p, os.O_PATH | os.O_DIRECTORY)) for p in hidden]
    for tmp in tmp_dirs:
        _mount("tmpfs", tmp, "tmpfs", MS_NOSUID | MS_NODEV, f"size={cfg['limits']['tmp_bytes']},mode=1777")
    facts["private_tmp"] = True
    covers = sorted(set(blocked.values()), key=len)
    for cover in covers:
        if not any(cover.startswith(other + "/") for other in [*covers, *tmp_dirs]):
            _mount("tmpfs", cover, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    for path, fd in handles:
        os.makedirs(path, mode=0o755, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
        os.close(fd)
    facts["covered"] = covers
    try:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        facts["private_proc"] = True
    except OSError as exc:  # e.g. an unprivileged user namespace under a partly masked /proc
        facts["private_proc"] = False
        facts["proc_error"] = str(exc)
    workdir = "/tmp/work"
    os.mkdir(workdir, 0o700)
    return workdir


# ---------------------------------------------------------------------------
# the program process


def _set_rlimits(limits: dict, facts: dict) -> None:
    wanted = {
        resource.RLIMIT_CPU: limits["cpu_seconds"],
        resource.RLIMIT_AS: limits["memory_bytes"],
        resource.RLIMIT_DATA: limits["memory_bytes"],
        resource.RLIMIT_NPROC: limits["max_processes"],
        resource.RLIMIT_FSIZE: limits["max_file_bytes"],
        resource.RLIMIT_NOFILE: limits["max_open_files"],
        resource.RLIMIT_CORE: 0,
    }
    if limits.get("stack_bytes"):
        wanted[resource.RLIMIT_STACK] = limits["stack_bytes"]
    for res, value in wanted.items():
        hard = resource.getrlimit(res)[1]
        if hard != resource.RLIM_INFINITY and value > hard and os.geteuid() != 0:
            value = hard  # cannot raise a hard limit without privilege
        resource.setrlimit(res, (value, value))
    facts["rlimits"] = True


def _drop_capabilities() -> None:
    """Clear every capability (userns mode: we stay ns-root but powerless)."""
    for cap in range(64):
        try:
            _prctl(PR_CAPBSET_DROP, cap)
        except OSError:
            break  # past the last capability the kernel knows

    class Header(ctypes.Structure):
        _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))

    class Data(ctypes.Structure):
        _fields_ = (("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32))

    header, data = Header(0x20080522, 0), (Data * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")


def _world_traversable(path: str) -> bool:
    return _blocked_ancestor(os.path.realpath(path) + "/x") is None


def _become_program(cfg: dict, mode: str, facts: dict, workdir: str) -> None:
    """Limits and privilege drop of the process that will run the code."""
    _set_rlimits(cfg["limits"], facts)
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    uid = cfg["uid"]
    switch = mode != "userns" and uid is not None and os.geteuid() == 0
    if switch and mode == "rlimits" and not all(_world_traversable(p) for p in cfg["expose"]):
        switch = False  # the fresh uid could not even import the standard library
        facts["uid_note"] = "interpreter not readable by other users: kept the current uid"
    if mode == "userns":
        _drop_capabilities()
    elif switch:
        os.chown(workdir, uid, uid)
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    facts["uid"] = os.getuid()
    facts["privileges_dropped"] = mode == "userns" or switch or os.geteuid() != 0
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # cleared by the credential change above
    os.environ.update(HOME=workdir, TMPDIR="/tmp" if mode != "rlimits" else workdir)
    os.chdir(workdir)


def _run_program(cfg: dict) -> None:
    for name, source in cfg["modules"].items():
        module = types.ModuleType(name)
        module.__file__ = f"<sandbox:{name}>"
        sys.modules[name] = module
        exec(compile(source, module.__file__, "exec"), module.__dict__)
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__="<sandbox:main>", __builtins__=builtins)
    sys.modules["__main__"] = main
    sys.argv = ["<sandbox>"]
    exec(compile(cfg["source"], "<sandbox:main>", "exec"), main.__dict__)


def _program(cfg: dict, mode: str, facts: dict, workdir: str) -> None:
    _become_program(cfg, mode, facts, workdir)
    _report(cfg, {"isolation": facts})
    os.close(cfg["report_fd"])
    _run_program(cfg)


def _exit_code_of(fn: object, *args: object) -> int:
    """Run `fn` the way the interpreter runs a script: the exit code it would give."""
    try:
        fn(*args)  # type: ignore[operator]
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, int | None):
            print(exc.code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    return code


# ---------------------------------------------------------------------------
# process layout


def _init(cfg: dict, mode: str, facts: dict, host_mnt_ns: str) -> None:
    """pid 1 of the new namespaces: mounts, forks the program, reaps, reports its exit."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    workdir = _setup_mounts(cfg, host_mnt_ns, facts)
    program = os.fork()
    if program == 0:
        os._exit(_exit_code_of(_program, cfg, mode, facts, workdir))
    while True:  # reap orphans until the program itself ends
        pid, status = os.wait()
        if pid == program:
            break
    code = os.waitstatus_to_exitcode(status)
    _report(cfg, {"exit": code})
    os._exit(code if code >= 0 else 128 - code)


def main() -> None:
    cfg = _read_header()
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the runner died: so do we
    os.umask(0o022)
    mode = cfg["mode"]
    facts: dict = {"requested": mode}
    host_mnt_ns = os.readlink("/proc/self/ns/mnt")
    if mode in ("root", "userns"):
        try:
            _enter_namespaces(userns=mode == "userns")
            facts.update(namespaces=True, network_isolated=True, pid_namespace=True)
        except OSError as exc:
            if cfg["strict"]:
                _report(cfg, {"error": f"namespaces unavailable ({exc}) and strict isolation was requested"})
                os._exit(125)
            facts.update(namespaces=False, fallback=f"namespaces unavailable: {exc}")
            mode = "rlimits"
    facts["mode"] = mode
    if mode == "rlimits":
        facts.update(network_isolated=False, pid_namespace=False, readonly_root=False, private_tmp=False)
        _program(cfg, mode, facts, cfg["host_workdir"])
        return
    init = os.fork()
    if init == 0:
        try:
            _init(cfg, mode, facts, host_mnt_ns)
        except Exception as exc:  # report setup failures instead of dying silently
            _report(cfg, {"error": f"sandbox setup failed: {type(exc).__name__}: {exc}"})
            os._exit(125)
    os.close(cfg["report_fd"])
    code = os.waitstatus_to_exitcode(os.waitpid(init, 0)[1])
    os._exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main()
