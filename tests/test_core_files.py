"""Atomic writes and file digests (core.files), and the exact money helpers (core.money)."""

from __future__ import annotations

import hashlib
from decimal import Decimal, getcontext
from pathlib import Path

import pytest

from bench_pipeline.core import files, money

pytestmark = pytest.mark.unit


def test_a_write_creates_its_folder_and_leaves_no_partial(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "out.json"
    assert files.write_text(target, "é\n") == target
    assert target.read_bytes() == "é\n".encode()
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.json"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_partial(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    files.write_bytes(target, b"old")
    with pytest.raises(RuntimeError), files.replacing(target) as partial:
        partial.write_bytes(b"half")
        raise RuntimeError("the writer died")
    assert target.read_bytes() == b"old"
    assert not files.partial_path(target).exists()


def test_a_stale_partial_file_or_folder_is_cleared_before_writing(tmp_path: Path) -> None:
    target = tmp_path / "release"
    stale = files.partial_path(target)
    (stale / "data").mkdir(parents=True)
    with files.replacing(target) as partial:
        assert not partial.exists()
        (partial / "manifest.json").parent.mkdir()
        (partial / "manifest.json").write_text("{}")
    assert (target / "manifest.json").read_text() == "{}"


def test_a_placed_copy_is_a_link_that_a_later_write_does_not_reach(tmp_path: Path) -> None:
    source = files.write_bytes(tmp_path / "release" / "models.json", b"[1]\n")
    target = files.place_copy(source, tmp_path / "site" / "data" / "models.json")
    assert target.read_bytes() == b"[1]\n"
    assert target.stat().st_ino == source.stat().st_ino  # no bytes copied
    assert sorted(p.name for p in target.parent.iterdir()) == ["models.json"]  # no partial

    files.write_bytes(target, b"[2]\n")  # every writer replaces by rename
    assert source.read_bytes() == b"[1]\n"
    files.place_copy(source, target)  # over an existing file too
    assert target.read_bytes() == b"[1]\n"


def test_a_placed_copy_across_file_systems_is_a_streamed_copy(tmp_path: Path) -> None:
    other = Path("/dev/shm")
    if not other.is_dir() or other.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("no second file system to copy across")
    content = bytes(range(256)) * 9_000  # more than one block
    source = files.write_bytes(tmp_path / "big.csv", content)
    target = other / f"bench-place-{tmp_path.name}" / "big.csv"
    try:
        files.place_copy(source, target)
        assert target.read_bytes() == content
        assert target.stat().st_ino != source.stat().st_ino
    finally:
        target.unlink(missing_ok=True)
        target.parent.rmdir()


def test_sha256_file_matches_hashlib_across_block_boundaries(tmp_path: Path) -> None:
    content = bytes(range(256)) * 8193  # just over 2 MiB: three blocks
    path = tmp_path / "big"
    path.write_bytes(content)
    assert files.sha256_file(path) == hashlib.sha256(content).hexdigest()
    with pytest.raises(OSError):
        files.sha256_file(tmp_path / "missing")


@pytest.mark.parametrize(
    ("value", "tidy", "plain"),
    [
        ("0.269000000", "0.269", "0.269"),
        ("30.00000", "30", "30"),
        ("3E+1", "30", "30"),
        ("1.5E-7", "1.5E-7", "0.00000015"),
        ("0.000", "0", "0"),
        ("123456789012345678901234567890.5", None, "123456789012345678901234567890.5"),
    ],
)
def test_tidy_and_plain_keep_every_digit_without_exponent(
    value: str, tidy: str | None, plain: str
) -> None:
    result = money.tidy(Decimal(value))
    assert result == Decimal(value)
    if tidy is not None:
        assert str(result) == tidy
    assert money.plain(Decimal(value)) == plain


def test_exact_context_widens_the_default_precision_only_inside_the_block() -> None:
    third = Decimal(1) / 3
    with money.exact():
        wide = Decimal(1) / 3
    with money.exact(80):
        wider = Decimal(1) / 3
    assert len(third.as_tuple().digits) == getcontext().prec == 28
    assert len(wide.as_tuple().digits) == money.PRECISION
    assert len(wider.as_tuple().digits) == 80
