"""Git object plumbing on the store's repositories, under one name: objects, reads, refs, packs.

Sharing and the engine work with the store's repositories through this one import; each piece
lives in its own module (`objects` writes git's format, `reader` reads through one `cat-file`
session, `refs` reads and moves refs, `packs` moves objects between repositories, `pack_writer`
gathers what one operation writes into one pack).
"""

from __future__ import annotations

from core.git.objects import build_tree, commit, commit_parents, parse_tree, write_blobs
from core.git.pack_writer import batched
from core.git.packs import index_pack, pack_objects
from core.git.reader import (
    ObjectReader,
    Oversized,
    has_object,
    list_tree,
    read_capped,
    read_objects,
    session,
    session_reader,
    top_entries,
)
from core.git.refs import first_parent_chain, is_ancestor, read_ref, refs_under, set_ref, set_refs

__all__ = [
    "ObjectReader",
    "Oversized",
    "batched",
    "build_tree",
    "commit",
    "commit_parents",
    "first_parent_chain",
    "has_object",
    "index_pack",
    "is_ancestor",
    "list_tree",
    "pack_objects",
    "parse_tree",
    "read_capped",
    "read_objects",
    "read_ref",
    "refs_under",
    "session",
    "session_reader",
    "set_ref",
    "set_refs",
    "top_entries",
    "write_blobs",
]
