"""Named locks (`core/locks`): a holder in another process makes the next wait, a holder
killed with SIGKILL frees its names at once, and look-alike names are distinct locks."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bench_pipeline.core.locks import holding, lock_file

pytestmark = pytest.mark.unit

HOLD = """
import sys, time
from pathlib import Path
from bench_pipeline.core.locks import holding
with holding(Path(sys.argv[1]), sys.argv[2:]):
    print("held", flush=True)
    time.sleep(600)
"""


def _hold_in_process(folder: Path, *names: str) -> subprocess.Popen:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder), *names], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def test_a_name_held_elsewhere_waits_and_a_killed_holder_frees_it(tmp_path: Path) -> None:
    holder = _hold_in_process(tmp_path, "openai/gpt-5@v1", "b")
    waited: list[str] = []
    got = threading.Event()

    def take() -> None:
        with holding(tmp_path, ["c", "openai/gpt-5@v1"], waited.append):
            got.set()

    taker = threading.Thread(target=take)
    try:
        taker.start()
        assert not got.wait(1.0)  # still held by the other process
        assert waited == ["openai/gpt-5@v1"]
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        assert got.wait(10)  # the kernel dropped the dead holder's lock
    finally:
        holder.kill()
        taker.join(10)


def test_names_held_by_others_do_not_block_different_names(tmp_path: Path) -> None:
    holder = _hold_in_process(tmp_path, "a")
    try:
        waited: list[str] = []
        with holding(tmp_path, ["b", "b", "a/"], waited.append):
            pass
        assert waited == []
    finally:
        holder.kill()
        holder.wait(10)


def test_look_alike_names_have_their_own_files(tmp_path: Path) -> None:
    names = ["x/y", "x_y", "x y", "x:y", "../x"]
    files = {lock_file(tmp_path, name) for name in names}
    assert len(files) == len(names)
    assert all(file.parent == tmp_path for file in files)  # no name leaves the folder
