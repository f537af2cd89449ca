"""Objects Pitstop writes as one pack (core.git.pack_writer) are what git itself reads, and
objects read straight from packs (core.git.pack_reader) are exactly git's — or left to git.

Every check here asks real git: `verify-pack`, `fsck`, `cat-file`. The reader is tried against
packs git wrote (with deltas) and packs damaged on purpose: it returns the right bytes or none.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import GitError
from core.git import objects, pack_writer, plumbing, transport
from core.git.pack_reader import PackedObjects
from core.git.reader import ObjectReader
from tests.core.corekit import git_bytes


def _bare(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    return path


def _oid(kind: str, body: bytes) -> str:
    return hashlib.sha1(f"{kind} {len(body)}\0".encode() + body).hexdigest()


def _loose_files(repo: Path) -> list[Path]:
    return [p for p in (repo / "objects").glob("??/*") if p.is_file()]


_BODIES = st.lists(st.binary(max_size=3000), min_size=1, max_size=12, unique=True)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(bodies=_BODIES, big=st.sampled_from([0, 15, 16, 2047, 2048, 70_000]))
def test_a_written_pack_is_one_git_verifies_and_reads_back_byte_for_byte(
    tmp_path_factory: pytest.TempPathFactory, bodies: list[bytes], big: int
) -> None:
    repo = _bare(tmp_path_factory.mktemp("p") / "r.git")
    # sizes around the entry header's 4-bit and 7-bit boundaries, and one large blob
    everything = {_oid("blob", b): ("blob", b) for b in [*bodies, os.urandom(big)]}
    checksum, size = pack_writer.write_pack(repo, everything)
    pack = repo / "objects" / "pack" / f"pack-{checksum}.pack"
    assert size == pack.stat().st_size + pack.with_suffix(".idx").stat().st_size
    # the very same pack again: already in place, nothing written, nothing it may take back
    written = list(pack_writer.WRITTEN)
    assert pack_writer.write_pack(repo, everything) == (checksum, 0)
    assert written == pack_writer.WRITTEN
    verified = git_bytes(repo, "verify-pack", "-v", str(pack.with_suffix(".idx"))).decode()
    assert f"pack-{checksum}.pack: ok" in verified
    packed = PackedObjects(f"{repo}/objects/")
    for oid, (kind, body) in everything.items():
        assert git_bytes(repo, "cat-file", kind, oid) == body
        assert packed.read(oid) == (kind, body)
    packed.close()


def test_objects_written_in_a_batch_are_one_pack_readable_meanwhile(tmp_path: Path) -> None:
    repo = _bare(tmp_path / "r.git")
    with plumbing.session(repo), pack_writer.batched(repo):
        blob = objects.write_object(repo, "blob", b"hello\n")
        tree = objects.build_tree(repo, {"a/b.txt": b"deep\n"}, blob_ids={"hello.txt": blob})
        commit = objects.commit(repo, tree, [], "one pack", "@1700000000 +0000")
        assert not _loose_files(repo) and not list(repo.glob("objects/pack/*.pack"))
        # read back before any file exists: from what the batch holds
        assert plumbing.read_objects(repo, [f"{commit}:hello.txt"]) == {
            f"{commit}:hello.txt": b"hello\n"
        }
    assert not _loose_files(repo)
    assert len(list(repo.glob("objects/pack/*.pack"))) == 1
    assert git_bytes(repo, "fsck", "--strict", commit) == b""
    assert git_bytes(repo, "cat-file", "blob", f"{commit}:a/b.txt") == b"deep\n"


def test_a_git_process_started_inside_a_batch_finds_its_objects(tmp_path: Path) -> None:
    repo = _bare(tmp_path / "r.git")
    with pack_writer.batched(repo):
        first = objects.write_object(repo, "blob", b"first\n")
        # git is about to read the repository: what gathered so far is written first
        assert plumbing.read_ref(repo, "refs/pitstop/ledger/none") is None
        assert git_bytes(repo, "cat-file", "blob", first) == b"first\n"
        second = objects.write_object(repo, "blob", b"second\n")
    assert len(list(repo.glob("objects/pack/*.pack"))) == 2
    assert git_bytes(repo, "cat-file", "blob", second) == b"second\n"


def test_a_batch_that_fails_writes_nothing(tmp_path: Path) -> None:
    repo = _bare(tmp_path / "r.git")
    with pytest.raises(RuntimeError), pack_writer.batched(repo):
        objects.write_object(repo, "blob", b"for what failed\n")
        raise RuntimeError("the operation failed")
    assert not _loose_files(repo)
    assert not list(repo.glob("objects/pack/*"))


def test_deltas_in_packs_git_wrote_are_rebuilt_here(tmp_path: Path) -> None:
    repo = _bare(tmp_path / "r.git")
    base = os.urandom(4000)
    versions = [base[:n] + b"changed %d" % n + base[n:] for n in range(0, 4000, 400)]
    oids = [objects.write_object(repo, "blob", body) for body in versions]
    listed = ("\n".join(oids) + "\n").encode()
    git_bytes(
        repo,
        "pack-objects",
        "-q",
        "--window=20",
        "--depth=10",
        str(repo / "objects/pack/pack"),
        input=listed,
    )
    git_bytes(repo, "prune-packed")
    assert not _loose_files(repo)
    packed = PackedObjects(f"{repo}/objects/")
    whole = [oid for oid in oids if packed.find(oid) is not None]
    assert 0 < len(whole) < len(oids), "git stores some of these as deltas"
    reader = ObjectReader(repo)
    try:
        for oid, body in zip(oids, versions, strict=True):
            assert packed.read(oid) == ("blob", body)  # whole, or rebuilt from its delta
            assert reader.read(oid) == ("blob", body)
        assert reader._process is None  # no cat-file for any of them
    finally:
        reader.close()
        packed.close()


def test_a_damaged_pack_never_yields_wrong_bytes(tmp_path: Path) -> None:
    repo = _bare(tmp_path / "r.git")
    body = b"the real content\n" * 50
    oid = _oid("blob", body)
    checksum, _size = pack_writer.write_pack(repo, {oid: ("blob", body)})
    pack = repo / "objects" / "pack" / f"pack-{checksum}.pack"
    pack.chmod(0o600)
    raw = bytearray(pack.read_bytes())
    raw[30] ^= 0x01  # inside the deflated data
    pack.write_bytes(bytes(raw))
    packed = PackedObjects(f"{repo}/objects/")
    assert packed.read(oid) is None
    packed.close()
    reader = ObjectReader(repo)
    try:  # git cannot read it either: one clear error, never other bytes
        with pytest.raises(GitError, match="damaged object"):
            reader.read(oid)
    finally:
        reader.close()


def test_a_pack_index_naming_an_object_the_pack_does_not_hold_is_not_believed(
    tmp_path: Path,
) -> None:
    """An index whose id points at another object's entry (a forged index): the bytes found
    do not hash to the id asked for, so nothing is returned."""
    repo = _bare(tmp_path / "r.git")
    real = b"what the entry holds\n"
    forged_id = _oid("blob", b"what the index claims\n")
    entries = {_oid("blob", real): ("blob", real)}
    checksum, _size = pack_writer.write_pack(repo, entries)
    index = repo / "objects" / "pack" / f"pack-{checksum}.idx"
    index.chmod(0o600)
    data = bytearray(index.read_bytes())
    real_raw = bytes.fromhex(_oid("blob", real))
    at = data.index(real_raw)
    data[at : at + 20] = bytes.fromhex(forged_id)
    fanout_bucket = bytes.fromhex(forged_id)[0]
    # rebuild the fan-out so the forged id is found where a lookup looks for it
    counts = [0] * 256
    for bucket in range(fanout_bucket, 256):
        counts[bucket] = 1
    data[8 : 8 + 1024] = b"".join(c.to_bytes(4, "big") for c in counts)
    index.write_bytes(bytes(data))
    packed = PackedObjects(f"{repo}/objects/")
    assert packed.find(forged_id) is not None  # the forged index lists it ...
    assert packed.read(forged_id) is None  # ... and the bytes there are not it
    packed.close()


def test_housekeeping_runs_when_loose_objects_pile_up(tmp_path: Path) -> None:
    """A fetch no longer starts `git maintenance run --auto` every time; it still runs when
    loose objects pile up, and git then packs them (here with a low gc.auto)."""
    repo = _bare(tmp_path / "r.git")
    for key, value in (("gc.auto", "20"), ("gc.autoDetach", "false")):  # low, and in front
        subprocess.run(["git", "--git-dir", str(repo), "config", key, value], check=True)
    blobs: dict[str, str] = {}
    n = 0
    while len(blobs) < 8:  # eight objects whose ids start with 17: git's own sample of loose
        body = b"filler %d\n" % n
        n += 1
        if _oid("blob", body).startswith("17"):
            blobs[f"f{n}.txt"] = objects.write_object(repo, "blob", body)
    tree = objects.build_tree(repo, {}, blob_ids=blobs)
    commit = objects.commit(repo, tree, [], "kept", "@1700000000 +0000")
    plumbing.set_refs(repo, {"refs/pitstop/checkpoints/t": commit})  # reachable: git packs it
    transport.maintain_if_due(repo)
    assert not list((repo / "objects" / "17").glob("*")), "git packed the loose objects"
    assert "in-pack: 10" in git_bytes(repo, "count-objects", "-v").decode()  # 8 + tree + commit


def test_object_sizes_read_loose_files_and_ask_git_for_the_rest(tmp_path: Path) -> None:
    """A loose object's size comes from its file; packed and missing ones from `cat-file`,
    and every answer is what `cat-file --batch-check=%(objectsize:disk)` says."""
    from core.git.reader import object_sizes

    repo = _bare(tmp_path / "store.git")

    def hash_object(body: bytes) -> str:
        return git_bytes(repo, "hash-object", "-w", "--stdin", input=body).decode().strip()

    packed = [hash_object(f"packed {n}\n".encode() * 40) for n in range(3)]
    git_bytes(repo, "repack", "-a", "-d", "-q")
    loose = [hash_object(f"loose {n}\n".encode() * 40) for n in range(3)]
    missing = "0" * 39 + "1"
    asked = [loose[0], packed[0], missing, *loose[1:], *packed[1:], loose[0], "not-an-id"]
    sizes = object_sizes(repo, asked)
    assert list(sizes) == list(dict.fromkeys(asked))  # each once, in the order asked
    real = git_bytes(
        repo,
        "cat-file",
        "--batch-check=%(objectname) %(objectsize:disk)",
        input=("\n".join([*loose, *packed]) + "\n").encode(),
    ).decode()
    for line in real.splitlines():
        oid, size = line.split()
        assert sizes[oid] == int(size), oid
    assert sizes[missing] is None and sizes["not-an-id"] is None
