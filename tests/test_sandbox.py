"""The sandbox: limits, isolation, containment of hostile programs, the codec and function calls.

Hostile programs only ever target things this test creates (a sentinel
directory, a listening socket, the test process itself); the fork bomb runs
only after a bounded probe has shown that the process limit holds.
"""

from __future__ import annotations

import collections
import decimal
import fractions
import math
import os
import shutil
import socket
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from aecg_bench.sandbox import Limits, codec, run_python
from aecg_bench.sandbox.functions import run_calls


@cache
def isolation() -> dict:
    return run_python("pass", limits=Limits(wall_seconds=30)).isolation


def needs_namespaces() -> None:
    if not isolation().get("namespaces"):
        pytest.skip(f"namespaces unavailable on this host: {isolation().get('fallback')}")


def processes_of(uid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    pids.append(int(entry))
            except FileNotFoundError:
                continue
    return pids


def test_runs_a_program_with_its_stdin_and_reports_isolation():
    result = run_python("import sys\nprint(sys.stdin.read().upper())", stdin=b"hello")
    assert result.ok and result.exit_code == 0
    assert result.stdout == b"HELLO\n"
    assert result.isolation["rlimits"] is True
    assert "mode" in result.isolation


def test_exit_code_and_traceback_of_a_failing_program():
    result = run_python("raise SystemExit(3)")
    assert result.exit_code == 3 and not result.ok
    result = run_python("1/0")
    assert result.exit_code == 1 and b"ZeroDivisionError" in result.stderr


def test_infinite_loop_is_killed_at_the_wall_deadline():
    start = time.monotonic()
    result = run_python("while True:\n    pass", limits=Limits(wall_seconds=1.5))
    assert result.timed_out and not result.ok
    assert time.monotonic() - start < 8


def test_cpu_limit_kills_a_busy_program():
    result = run_python("while True:\n    pass", limits=Limits(wall_seconds=20, cpu_seconds=1))
    assert not result.timed_out
    assert result.signal == 9


def test_memory_limit_turns_a_memory_hog_into_an_error():
    hog = "chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 2**20))"
    result = run_python(hog, limits=Limits(memory_bytes=256 * 2**20, wall_seconds=20))
    assert result.exit_code == 1 and b"MemoryError" in result.stderr


def test_output_cap_stops_a_flood():
    result = run_python("while True:\n    print('x' * 10000)", limits=Limits(max_output_bytes=2**20))
    assert result.output_exceeded and not result.ok
    assert len(result.stdout) <= 2**20 + 65536


def test_process_limit_holds_before_a_real_fork_bomb():
    probe = (
        "import os, time\nn = 0\nfor _ in range(40):\n    try:\n        pid = os.fork()\n"
        "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(3)\n        os._exit(0)\n"
        "    n += 1\nprint(n)"
    )
    result = run_python(probe, limits=Limits(max_processes=6, wall_seconds=10))
    if result.isolation.get("uid") == 0:
        pytest.skip("running as uid 0 without a fresh uid: RLIMIT_NPROC would not bind")
    assert result.stdout.strip() == b"5"  # 5 children + the program itself

    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    start = time.monotonic()
    result = run_python(bomb, limits=Limits(max_processes=6, wall_seconds=2, cpu_seconds=2))
    assert result.timed_out or result.signal
    assert time.monotonic() - start < 10
    time.sleep(0.2)
    assert processes_of(result.isolation["uid"]) == []


def test_a_process_that_leaves_the_group_is_killed_too():
    escape = (
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n    os._exit(0)\n"
        "print('started', flush=True)\ntime.sleep(60)"
    )
    result = run_python(escape, limits=Limits(wall_seconds=1.5))
    assert result.timed_out and result.stdout == b"started\n"
    time.sleep(0.2)
    if result.isolation.get("uid") not in (None, os.getuid()):
        assert processes_of(result.isolation["uid"]) == []


def test_network_is_unreachable_even_on_loopback():
    needs_namespaces()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    code = (
        f"import socket\nfor addr in [('127.0.0.1', {port}), ('1.1.1.1', 80)]:\n    try:\n"
        "        socket.create_connection(addr, timeout=2)\n        print('connected', addr)\n"
        "    except OSError as exc:\n        print('blocked', exc.errno)"
    )
    try:
        result = run_python(code)
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()
    assert b"connected" not in result.stdout
    assert result.stdout.count(b"blocked") == 2


def test_files_outside_the_work_dir_cannot_be_deleted_or_written(outside_tmp: Path):
    needs_namespaces()
    target = Path(tempfile.mkdtemp(dir=outside_tmp, prefix=".sandbox-target-"))
    marker = f"/tmp/aecg-sandbox-marker-{os.getpid()}"
    try:
        target.chmod(0o777)
        sentinel = target / "sentinel.txt"
        sentinel.write_text("keep me")
        sentinel.chmod(0o666)
        code = (
            f"import os, shutil\nfor attempt in [lambda: os.remove({str(sentinel)!r}), "
            f"lambda: shutil.rmtree({str(target)!r}),\n"
            f"        lambda: open({str(sentinel)!r}, 'w').write('gone'), "
            f"lambda: open({str(target / 'new.txt')!r}, 'w').write('new')]:\n"
            "    try:\n        attempt()\n        print('done')\n    except OSError as exc:\n        print('denied', exc.errno)\n"
            f"open('inside.txt', 'w').write('fine')\nopen({marker!r}, 'w').write('private tmp')\nprint(os.listdir('.'))"
        )
        result = run_python(code)
        assert result.exit_code == 0, result.stderr
        assert result.stdout.count(b"denied") == 4 and b"done" not in result.stdout
        assert b"inside.txt" in result.stdout
        assert sentinel.read_text() == "keep me"
        assert sorted(p.name for p in target.iterdir()) == ["sentinel.txt"]
        assert not os.path.exists(marker)  # /tmp inside is a private tmpfs
    finally:
        shutil.rmtree(target, ignore_errors=True)


def test_killing_the_parent_or_the_test_process_fails_harmlessly():
    code = f"import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.kill({os.getpid()}, signal.SIGKILL)\nprint('alive')"
    result = run_python(code)
    assert result.exit_code == 1
    assert b"PermissionError" in result.stderr or b"ProcessLookupError" in result.stderr
    assert os.getpid() > 0  # still here


def test_results_are_the_same_serially_and_in_parallel():
    programs = [
        "print(list({'apple', 'banana', 'cherry', 'date'}))",  # set order: fixed hash seed
        "print(sum(i * i for i in range(10**5)))",
        "import os\nprint(sorted(os.listdir('.')))",
        "raise ValueError('boom')",
        "print(hash('sandbox'))",
        "import json\nprint(json.dumps({'b': 1, 'a': [1.5, None]}))",
    ]

    def outcome(src: str) -> tuple:
        r = run_python(src)
        return r.exit_code, r.stdout, r.stderr.splitlines()[-1:] if r.stderr else []

    serial = [outcome(p) for p in programs]
    with ThreadPoolExecutor(max_workers=3) as pool:
        parallel = list(pool.map(outcome, programs))
    assert serial == parallel
    assert serial[0][0] == 0 and serial[3][0] == 1


@pytest.mark.parametrize("mode", ["userns", "rlimits"])
def test_fallback_modes_run_programs(mode: str):
    result = run_python("print(6 * 7)", limits=Limits(mode=mode))  # type: ignore[arg-type]
    assert result.stdout == b"42\n", result.stderr
    assert result.isolation["mode"] in (mode, "rlimits")
    if result.isolation["mode"] == "userns":
        assert result.isolation["network_isolated"] and result.isolation["privileges_dropped"]


def test_codec_round_trips_the_types_equality_sees():
    values = [
        None,
        True,
        0,
        -(10**5000),
        1.5,
        -0.0,
        math.inf,
        -math.inf,
        complex(1, -2),
        "text",
        b"\x00bytes",
        bytearray(b"ba"),
        [1, (2, 3), {4}, frozenset({5})],
        (),
        {"a": 1, (1, 2): [3]},
        collections.Counter("abca"),
        collections.OrderedDict([("x", 1)]),
        collections.deque([1, 2]),
        range(1, 10, 2),
        decimal.Decimal("1.10"),
        fractions.Fraction(3, 7),
        np.float64(2.5),
        np.int32(7),
        np.array([[1.0, 2.0]]),
    ]
    for value in values:
        back = codec.loads(codec.dumps(value))
        assert type(back) is type(value), value
        if isinstance(value, np.ndarray):
            assert np.array_equal(back, value)
        else:
            assert back == value
    assert math.isnan(codec.loads(codec.dumps(math.nan)))
    assert codec.loads(codec.dumps((1, [1]))) != codec.loads(codec.dumps([1, [1]]))


def test_codec_unknown_objects_never_compare_equal():
    class Sneaky:
        def __eq__(self, other):
            return True

    back = codec.loads(codec.dumps(Sneaky()))
    assert isinstance(back, codec.Opaque)
    assert back != back.__class__("x", "y") and back != 1 and back is not None
    assert codec.loads(codec.dumps(map(str, [1]))) != ["1"]


def test_run_calls_streams_outputs_errors_and_time_outs():
    code = (
        "import math\ndef f(a, b):\n    print('noise')\n    if a == 3:\n        while True:\n            pass\n"
        "    return (a + b, {a}, math.inf)"
    )
    report = run_calls(code, "f", [(1, 2), (2.5, "x"), (3, 0), (4, 4)], [2, 2, 0.5, 2], Limits(wall_seconds=20))
    assert report.loaded and report.finished
    first, bad_type, loop, last = report.outcomes
    assert first.ok and first.value == (3, {1}, math.inf)
    assert not bad_type.ok and bad_type.error.startswith("TypeError")
    # stopped by the CPU timer, having spun: the timer counts the process's CPU (ITIMER_PROF), the report the
    # calling thread's clock, which read 0.395 s of a 0.5 s limit on a loaded 2-core machine
    assert loop.timed_out and not loop.ok and loop.cpu_seconds >= 0.25
    assert last.ok and last.value == (8, {4}, math.inf)


def test_run_calls_guard_stop_and_load_errors():
    guarded = run_calls("def g(x):\n    return open('/etc/hostname').read()", "g", [(1,)], [2], Limits())
    assert not guarded.outcomes[0].ok and "NoneType" in guarded.outcomes[0].error
    unguarded = run_calls("def g(x):\n    return x * 2", "g", [(1,), (2,), (3,)], [2] * 3, Limits(), guard=False)
    assert [o.value for o in unguarded.outcomes] == [2, 4, 6]
    stopped = run_calls(
        "def g(x):\n    return x", "g", [(i,) for i in range(50)], [2] * 50, Limits(), on_outcome=lambda o: o.index == 1
    )
    assert not stopped.finished and stopped.sandbox is not None and stopped.sandbox.stopped
    assert 2 <= len(stopped.outcomes) < 50
    broken = run_calls("def g(:\n", "g", [(1,)], [2], Limits())
    assert not broken.loaded and "SyntaxError" in broken.load_error
    missing = run_calls("def h():\n    return 1", "g", [(1,)], [2], Limits())
    assert not missing.loaded and "'g' is not defined" in missing.load_error


def test_large_outputs_travel_as_digests():
    code = "def big(n):\n    return [str(i) for i in range(n)]"
    report = run_calls(code, "big", [(10,), (2_000_000,), (2_000_000,)], [10] * 3, Limits(wall_seconds=60))
    small, large, again = (o.value for o in report.outcomes)
    assert small == [str(i) for i in range(10)]
    assert isinstance(large, codec.Digest) and large == again and large.size > 16 * 2**20
