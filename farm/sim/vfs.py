"""The in-memory filesystem of one simulated phone.

Shared by the sync service (push/pull/ls), the shell (redirects, ``cat``, ``rm``…)
and the apps (``uiautomator dump`` writes here). Paths are POSIX and absolute; the
shell resolves relative ones against its working directory before calling in.

Errors are the builtin ``OSError`` subclasses with a real ``errno`` so that each
caller can print what Android prints (``No such file or directory`` …).
"""

from __future__ import annotations

import errno
import posixpath
import stat as st
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

FILE_MODE = st.S_IFREG | 0o644
DIR_MODE = st.S_IFDIR | 0o755
DEFAULT_CAPACITY = 512 * 1024 * 1024

# What a fresh phone has; /sdcard stands in for the emulated storage mount.
DEFAULT_DIRS = (
    "/data/local/tmp",
    "/data/app",
    "/data/system",
    "/sdcard/Download",
    "/sdcard/Pictures",
    "/sdcard/DCIM",
    "/system/bin",
    "/system/app",
    "/dev",
    "/proc",
    "/storage/emulated/0",
)


def _oserror(code: int, path: str) -> OSError:
    import os

    return OSError(code, os.strerror(code), path)


@dataclass(slots=True)
class Node:
    """A file or directory; ``children`` is None for files."""

    mode: int
    mtime: int
    data: bytearray = field(default_factory=bytearray)
    children: dict[str, Node] | None = None
    ino: int = 0

    @property
    def is_dir(self) -> bool:
        return self.children is not None

    @property
    def size(self) -> int:
        return 4096 if self.children is not None else len(self.data)


@dataclass(frozen=True, slots=True)
class Stat:
    mode: int
    size: int
    mtime: int
    ino: int

    @property
    def is_dir(self) -> bool:
        return st.S_ISDIR(self.mode)

    @property
    def is_file(self) -> bool:
        return st.S_ISREG(self.mode)


class VirtualFS:
    """A bounded in-memory tree; ``/dev/null`` reads empty and swallows writes."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._used = 0
        self._next_ino = 1
        self.root = self._new_node(DIR_MODE, is_dir=True)
        for d in DEFAULT_DIRS:
            self.mkdir(d, parents=True)
        self.write("/dev/null", b"")

    # -- helpers -----------------------------------------------------------------
    def _new_node(self, mode: int, *, is_dir: bool) -> Node:
        node = Node(mode=mode, mtime=int(time.time()), ino=self._next_ino)
        self._next_ino += 1
        if is_dir:
            node.children = {}
        return node

    @staticmethod
    def normpath(path: str) -> str:
        if not path.startswith("/"):
            path = "/" + path
        norm = posixpath.normpath(path)
        # posixpath keeps a leading '//' as-is; Android paths never mean anything by it.
        return "/" + norm.lstrip("/")

    @staticmethod
    def _parts(path: str) -> list[str]:
        return [p for p in VirtualFS.normpath(path).split("/") if p]

    def _lookup(self, path: str) -> Node | None:
        node = self.root
        for part in self._parts(path):
            if node.children is None:
                return None
            child = node.children.get(part)
            if child is None:
                return None
            node = child
        return node

    def _parent_of(self, path: str, *, make_parents: bool) -> tuple[Node, str]:
        parts = self._parts(path)
        if not parts:
            raise _oserror(errno.EISDIR, path)
        node = self.root
        for part in parts[:-1]:
            assert node.children is not None
            child = node.children.get(part)
            if child is None:
                if not make_parents:
                    raise _oserror(errno.ENOENT, path)
                child = self._new_node(DIR_MODE, is_dir=True)
                node.children[part] = child
            if child.children is None:
                raise _oserror(errno.ENOTDIR, path)
            node = child
        return node, parts[-1]

    # -- queries -----------------------------------------------------------------
    def stat(self, path: str) -> Stat | None:
        node = self._lookup(path)
        if node is None:
            return None
        return Stat(mode=node.mode, size=node.size, mtime=node.mtime, ino=node.ino)

    def exists(self, path: str) -> bool:
        return self._lookup(path) is not None

    def is_dir(self, path: str) -> bool:
        node = self._lookup(path)
        return node is not None and node.is_dir

    def read(self, path: str) -> bytes:
        node = self._lookup(path)
        if node is None:
            raise _oserror(errno.ENOENT, path)
        if node.children is not None:
            raise _oserror(errno.EISDIR, path)
        return bytes(node.data)

    def listdir(self, path: str) -> list[tuple[str, Stat]]:
        node = self._lookup(path)
        if node is None:
            raise _oserror(errno.ENOENT, path)
        if node.children is None:
            raise _oserror(errno.ENOTDIR, path)
        return [
            (name, Stat(mode=c.mode, size=c.size, mtime=c.mtime, ino=c.ino))
            for name, c in sorted(node.children.items())
        ]

    def walk_files(self, path: str = "/") -> Iterator[str]:
        """Every regular file below ``path``, depth first, sorted."""
        node = self._lookup(path)
        if node is None:
            return
        if node.children is None:
            yield self.normpath(path)
            return
        for name, _ in self.listdir(path):
            yield from self.walk_files(posixpath.join(self.normpath(path), name))

    @property
    def used_bytes(self) -> int:
        return self._used

    # -- mutations ---------------------------------------------------------------
    def write(
        self,
        path: str,
        data: bytes | bytearray | memoryview,
        *,
        append: bool = False,
        mode: int = FILE_MODE,
        mtime: int | None = None,
        make_parents: bool = False,
    ) -> None:
        """Create or replace (or append to) a regular file.

        Raises ``ENOSPC`` past the phone's capacity, so an oversize push fails the
        way a full phone does instead of taking the host's memory.
        """
        if self.normpath(path) == "/dev/null":
            node = self._lookup("/dev/null")
            if node is not None:
                return
        parent, name = self._parent_of(path, make_parents=make_parents)
        assert parent.children is not None
        node = parent.children.get(name)
        if node is not None and node.children is not None:
            raise _oserror(errno.EISDIR, path)
        old = len(node.data) if node is not None else 0
        new_size = old + len(data) if append else len(data)
        if self._used - old + new_size > self.capacity:
            raise _oserror(errno.ENOSPC, path)
        if node is None:
            node = self._new_node(st.S_IFREG | (mode & 0o7777 or 0o644), is_dir=False)
            parent.children[name] = node
        if append:
            node.data += data
        else:
            node.data = bytearray(data)
        self._used += new_size - old
        node.mtime = int(time.time()) if mtime is None else mtime

    def mkdir(self, path: str, *, parents: bool = False) -> None:
        node = self._lookup(path)
        if node is not None:
            if parents and node.is_dir:
                return
            raise _oserror(errno.EEXIST, path)
        parent, name = self._parent_of(path, make_parents=parents)
        assert parent.children is not None
        parent.children[name] = self._new_node(DIR_MODE, is_dir=True)

    def remove(self, path: str, *, recursive: bool = False) -> None:
        parent, name = self._parent_of(path, make_parents=False)
        assert parent.children is not None
        node = parent.children.get(name)
        if node is None:
            raise _oserror(errno.ENOENT, path)
        if node.children is not None:
            if not recursive:
                raise _oserror(errno.EISDIR, path)
            self._used -= sum(len(n.data) for n in self._iter_nodes(node))
        else:
            self._used -= len(node.data)
        del parent.children[name]

    def _iter_nodes(self, node: Node) -> Iterator[Node]:
        yield node
        for child in (node.children or {}).values():
            yield from self._iter_nodes(child)
