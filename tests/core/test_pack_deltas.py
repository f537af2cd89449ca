"""Objects git stored as deltas are rebuilt from their packs exactly as `cat-file` gives them,
and a damaged or hostile delta is refused (None), never believed and never a crash.

The base commit's trees reach a store by `fetch`, deltified; a checkpoint that rewrites the
trees on a changed path reads them (`plain_tree`), and a `cat-file` process only for that
would cost more than the whole tree write.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from corekit import git, git_bytes, write
from hypothesis import given, settings
from hypothesis import strategies as st

from core.git.pack_reader import PackedObjects, apply_delta


def _deltified_repo(tmp_path: Path) -> Path:
    """A repository of similar files and trees over many commits, packed hard into deltas."""
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    lines = [f"line {n} of a file that changes a little every commit\n" for n in range(300)]
    for round_ in range(12):
        lines[round_ * 7] = f"changed in round {round_}\n"
        for name in ("a.txt", "dir/b.txt", "dir/deeper/c.txt"):
            write(repo / name, "".join(lines) + name)
        write(repo / f"dir/new-{round_}.txt", f"{round_}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"round {round_}")
    git(repo, "repack", "-a", "-d", "-f", "-q", "--depth=50", "--window=50")
    git(repo, "prune-packed")
    return repo


def _all_objects(repo: Path) -> list[str]:
    out = git(repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    return out.split()


def _deltas(repo: Path) -> set[str]:
    """The ids the pack stores as deltas (verify-pack names their bases)."""
    pack = next((repo / ".git/objects/pack").glob("*.idx"))
    out = git(repo, "verify-pack", "-v", str(pack))
    return {line.split()[0] for line in out.splitlines() if len(line.split()) == 7}


def test_every_object_of_a_deltified_pack_reads_as_cat_file_gives_it(tmp_path: Path) -> None:
    repo = _deltified_repo(tmp_path)
    oids = _all_objects(repo)
    deltas = _deltas(repo)
    assert len(deltas) > 20  # the test is about deltas: there must be many, trees among them
    kinds = dict(
        line.split()
        for line in git(
            repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)"
        ).splitlines()
    )
    assert {kinds[oid] for oid in deltas} >= {"tree", "blob"}
    packed = PackedObjects(f"{repo}/.git/objects/")
    try:
        for oid in oids:
            expected = git_bytes(repo / ".git", "cat-file", kinds[oid], oid)
            assert packed.read(oid) == (kinds[oid], expected), oid
    finally:
        packed.close()


def _damage_a_delta(repo: Path) -> str:
    """Flip a byte inside one delta entry of the pack (after its type and size); its id."""
    deltas = sorted(_deltas(repo))
    pack = next((repo / ".git/objects/pack").glob("*.pack"))
    lines = git(repo, "verify-pack", "-v", str(pack.with_suffix(".idx"))).splitlines()
    offsets = {line.split()[0]: int(line.split()[4]) for line in lines if len(line.split()) == 7}
    target = deltas[len(deltas) // 2]
    data = bytearray(pack.read_bytes())
    data[offsets[target] + 4] ^= 0xFF
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))
    return target


def test_a_damaged_delta_is_refused_not_believed(tmp_path: Path) -> None:
    repo = _deltified_repo(tmp_path)
    target = _damage_a_delta(repo)
    packed = PackedObjects(f"{repo}/.git/objects/")
    try:
        assert packed.read(target) is None  # inflated to something else, or not at all
    finally:
        packed.close()
    # the damage is real: git itself refuses that object
    result = subprocess.run(
        ["git", "cat-file", "-p", target], cwd=repo, capture_output=True, check=False
    )
    assert result.returncode != 0


def test_delta_instructions_rebuild_copies_and_inserts() -> None:
    base = b"0123456789abcdef" * 8
    # source size 128, target size 4 + 16: insert "WXYZ", copy 16 bytes from offset 16
    delta = bytes([128, 1, 20, 4]) + b"WXYZ" + bytes([0x80 | 0x01 | 0x10, 16, 16])
    assert apply_delta(base, delta) == b"WXYZ" + base[16:32]
    assert apply_delta(base[:-1], delta) is None  # a delta for another base
    assert apply_delta(base, delta[:-1]) is None  # cut short
    assert apply_delta(base, bytes([128, 1, 1, 0])) is None  # the reserved instruction
    copy_too_far = bytes([128, 1, 16, 0x80 | 0x01 | 0x10, 120, 16])
    assert apply_delta(base, copy_too_far) is None


@settings(max_examples=300, deadline=None)
@given(base=st.binary(max_size=64), delta=st.binary(max_size=64))
def test_any_delta_bytes_give_bytes_or_none(base: bytes, delta: bytes) -> None:
    result = apply_delta(base, delta)
    assert result is None or isinstance(result, bytes)
