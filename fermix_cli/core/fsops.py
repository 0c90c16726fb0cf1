"""File operations on already-checked canonical paths that a symlink swapped in later cannot redirect.

Every directory on the way is opened with O_NOFOLLOW relative to its parent's descriptor, so a
component replaced by a symlink after the sandbox check makes the operation fail instead of
following it. New files are created O_EXCL|O_NOFOLLOW; replacements go through a temp file in the
target directory and an atomic rename (written without a name where O_TMPFILE allows, so a kill
mid-write leaves nothing behind).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator

from .errors import ToolError, world_error

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _changed(path: str) -> ToolError:
    return world_error(
        "invalid_path",
        f"Path changed while it was being opened (a symlink appeared): {path}. Retry the call.",
        {"path": path},
    )


def _parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p]


def _component_error(fd: int, part: str, here: str, path: str) -> Exception:
    """Why directory component `part` (at `here`) did not open: a symlink (swapped in after the check),
    or a file that is not a directory, which no retry will change (`NotADirectoryError` naming it)."""
    try:
        st = os.stat(part, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return _changed(path)
    if stat.S_ISLNK(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return _changed(path)
    return NotADirectoryError(errno.ENOTDIR, "Not a directory", here)


def trailing_slash_error(shown: str, st: os.stat_result | None, *, dir_code: str) -> ToolError:
    """The refusal for a write target written with a trailing `/`, as POSIX refuses it.

    `shown` is the path without the slash, `st` what lstat found there; an existing non-directory is
    `not_a_directory`, anything else `dir_code` (the caller's code for a directory where a file is needed).
    """
    if st is not None and not stat.S_ISDIR(st.st_mode):
        return ToolError(
            "not_a_directory",
            f"{shown}/ ends with /, which names a directory, but {shown} is not one; "
            "drop the trailing / to write the file.",
            {"path": shown},
        )
    return ToolError(
        dir_code,
        f"{shown}/ ends with /, which names a directory; a file path is needed (drop the trailing / to "
        "write a file).",
        {"path": shown},
    )


def non_directory_ancestor(path: str) -> str | None:
    """The nearest existing ancestor of `path` when it is not a directory (so `path` can never exist)."""
    parent = os.path.dirname(path)
    while parent not in ("/", ""):
        try:
            st = os.lstat(parent)
        except (FileNotFoundError, NotADirectoryError):
            parent = os.path.dirname(parent)
            continue
        return None if stat.S_ISDIR(st.st_mode) else parent
    return None


def open_dir(path: str, *, create: bool = False, mode: int = 0o777) -> int:
    """A descriptor for a canonical directory, walked without following symlinks.

    With `create`, missing directories are made (mode filtered by the umask). A component that is a
    file raises `NotADirectoryError` with that component as its filename; a symlink, `invalid_path`.
    """
    fd = os.open("/", _DIR_FLAGS)
    here = ""
    try:
        for part in _parts(path):
            here += "/" + part
            try:
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, mode, dir_fd=fd)
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _component_error(fd, part, here, path) from None
                raise
            os.close(fd)
            fd = nfd
        return fd
    except BaseException:
        os.close(fd)
        raise


@contextlib.contextmanager
def dir_fd(path: str, *, create: bool = False) -> Iterator[int]:
    fd = open_dir(path, create=create)
    try:
        yield fd
    finally:
        os.close(fd)


def open_regular_file(path: str) -> int:
    """An O_RDONLY descriptor for a canonical regular file; directories and devices are refused."""
    parent, name = os.path.split(path)
    with dir_fd(parent) as dfd:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise _changed(path) from None
            if e.errno == errno.ENXIO:  # a UNIX socket (or a device without its driver): never a file
                raise world_error("invalid_path", f"Not a regular file: {path}", {"path": path}) from None
            raise
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode):
        os.close(fd)
        raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise world_error("invalid_path", f"Not a regular file: {path}", {"path": path})
    os.set_blocking(fd, True)
    return fd


def read_bytes(path: str, limit: int | None = None) -> bytes:
    """The file's bytes (at most `limit`+1 when a limit is given, so callers can detect overflow)."""
    fd = open_regular_file(path)
    with os.fdopen(fd, "rb") as f:
        return f.read() if limit is None else f.read(limit + 1)


NAME_MAX = 255  # bytes in one file name (Linux, macOS)


def _temp_name(name: str) -> str:
    """`NAME.tmp-<12 hex>` in the same directory, NAME cut (between characters) so it fits NAME_MAX."""
    suffix = f".tmp-{os.urandom(6).hex()}"
    room = NAME_MAX - len(suffix)
    prefix = name
    while len(os.fsencode(prefix)) > room:
        prefix = prefix[:-1]
    return prefix + suffix


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_EFFECTIVE_IDS = os.access in os.supports_effective_ids


def read_only_error(display: str, st: os.stat_result) -> ToolError:
    """The refusal for an existing file the effective user could not write in place."""
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o222:
        reason = f"is not writable by this user (mode {mode:04o}, owner uid {st.st_uid})"
        fix = "change its permissions first"
    else:
        reason = f"is read-only (mode {mode:04o})"
        fix = f"make it writable first (chmod u+w {display})"
    return ToolError(
        "read_only_file",
        f"{display} {reason}; {fix} if you mean to change it.",
        {"path": display, "mode": f"{mode:04o}"},
    )


def _writable(name: str, dfd: int | None = None) -> bool:
    """Whether the effective user may write the existing file `name` (os.access: root may).

    On a read-only file system access() says no for every file; that is left to the write itself,
    whose error names the file system.
    """
    if os.access(name, os.W_OK, dir_fd=dfd, effective_ids=_EFFECTIVE_IDS):
        return True
    try:
        flags = os.statvfs(dfd if dfd is not None else os.path.dirname(name) or ".").f_flag
    except OSError:
        return False
    return bool(flags & os.ST_RDONLY)


def refuse_read_only(path: str, display: str | None = None) -> None:
    """Raise `read_only_file` when the existing regular file `path` is not writable by the effective user.

    Replacing goes through a rename, which needs only the directory's write permission; this keeps the
    file's own permission meaningful, as ordinary editors do. A missing file passes.
    """
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return
    if stat.S_ISREG(st.st_mode) and not _writable(path):
        raise read_only_error(display or path, st)


def _keep_owner(fd: int, st: os.stat_result) -> None:
    """Give the temp file the replaced file's owner and group, as far as this process may."""
    own = os.fstat(fd)
    if (own.st_uid, own.st_gid) == (st.st_uid, st.st_gid):
        return
    try:
        os.fchown(fd, st.st_uid, st.st_gid)
    except PermissionError:
        # Not root: the owner cannot be given away, but the group can be kept when this user is in it;
        # when it is not, the file gets the writer's group, as any editor that replaces files does.
        if own.st_gid != st.st_gid:
            with contextlib.suppress(PermissionError):
                os.fchown(fd, -1, st.st_gid)


# O_TMPFILE (Linux 3.11+): the data is written into a file with no name, which a kill simply drops;
# it gets its temp name only once complete, just before the rename, so a killed write leaves nothing.
_O_TMPFILE = getattr(os, "O_TMPFILE", 0)
# Whether /proc/self/fd can name an O_TMPFILE file; cleared once it is found missing.
_proc_fd_links = bool(_O_TMPFILE)


def _fill(fd: int, data: bytes, mode: int, owner: os.stat_result | None, fsync: bool) -> None:
    """Write all of `data` to the new file `fd`, give it `mode` (and `owner`'s ids), and sync it."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    if owner is not None:
        _keep_owner(fd, owner)  # before the chmod: a chown clears set-id bits
    os.fchmod(fd, mode)
    if fsync:
        os.fsync(fd)


def _write_anonymous(
    dfd: int, name: str, data: bytes, mode: int, owner: os.stat_result | None, fsync: bool
) -> str | None:
    """Write the file with O_TMPFILE and link it in under a temp name; None where that cannot be done."""
    global _proc_fd_links
    if not _proc_fd_links:
        return None
    try:
        fd = os.open(".", _O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o600, dir_fd=dfd)
    except OSError as e:
        # EOPNOTSUPP: this file system has none; EISDIR or EINVAL: a kernel that predates it.
        if e.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            return None
        raise
    try:
        _fill(fd, data, mode, owner, fsync)
        tmp = _temp_name(name)
        try:
            # linkat(AT_SYMLINK_FOLLOW) through /proc names the open file; AT_EMPTY_PATH would need
            # CAP_DAC_READ_SEARCH.
            os.link(f"/proc/self/fd/{fd}", tmp, dst_dir_fd=dfd, follow_symlinks=True)
        except (FileNotFoundError, NotADirectoryError):
            if os.path.isdir("/proc/self/fd"):
                raise  # the directory itself went away: the named way would fail the same
            _proc_fd_links = False  # no /proc here: every later write takes the named way at once
            return None
        return tmp
    finally:
        os.close(fd)


def _write_temp(
    dfd: int, name: str, data: bytes, mode: int, owner: os.stat_result | None, fsync: bool
) -> str:
    """A complete, synced copy of the new file under a temp name beside `name`; returns that name."""
    tmp = _write_anonymous(dfd, name, data, mode, owner, fsync)
    if tmp is not None:
        return tmp
    tmp = _temp_name(name)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
    try:
        try:
            _fill(fd, data, mode, owner, fsync)
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise
    return tmp


def replace_at(
    dfd: int, name: str, data: bytes, *, mode: int, owner: os.stat_result | None = None, fsync: bool = True
) -> None:
    """Replace (or create) `name` in the directory open as `dfd`: a complete temp file renamed over it.

    No checks of what `name` is now (see `atomic_write`), no sync of the directory.
    """
    tmp = _write_temp(dfd, name, data, mode, owner, fsync)
    try:
        os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise


class DirSyncError(OSError):
    """The file was renamed into place, but syncing its directory failed (committed, not durable)."""


def atomic_write(
    path: str,
    data: bytes,
    *,
    create_parents: bool = False,
    fsync: bool = True,
    strict_dir_sync: bool = False,
    new_mode: int | None = None,
) -> bool:
    """Replace or create a file atomically; keeps an existing file's mode, and its owner and group as far
    as the process may (a new file gets `new_mode`, else the umask's default: a moved file keeps its mode
    so). Returns True if it existed.

    The file is replaced, not rewritten in place: other hard links to it keep the old content.
    An existing file the effective user may not write is refused (`read_only_file`).

    With `strict_dir_sync`, a failed fsync of the directory after the rename raises `DirSyncError`
    instead of being ignored.
    """
    parent, name = os.path.split(path)
    with dir_fd(parent, create=create_parents) as dfd:
        existed = False
        owner: os.stat_result | None = None
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            mode = new_mode if new_mode is not None else 0o666 & ~_current_umask()
        else:
            if stat.S_ISLNK(st.st_mode):
                raise _changed(path)
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
            if not stat.S_ISREG(st.st_mode):
                raise world_error("invalid_path", f"Not a regular file: {path}", {"path": path})
            if not _writable(name, dfd):
                raise read_only_error(path, st)
            mode = stat.S_IMODE(st.st_mode)
            existed = True
            owner = st
        replace_at(dfd, name, data, mode=mode, owner=owner, fsync=fsync)
        if fsync:
            try:
                os.fsync(dfd)
            except OSError as e:
                if strict_dir_sync:
                    raise DirSyncError(e.errno, e.strerror, parent) from None
        return existed


def move_with_content(source: str, dest: str, data: bytes) -> None:
    """Move the regular file `source` to `dest` (which must not exist), giving it `data` as content.

    The destination appears whole in one step, as a hard link to a complete and synced file, which never
    replaces anything (`FileExistsError` if `dest` exists), and the source is unlinked right after: a kill
    leaves the file at one of the two paths, never at both for longer than between two system calls.
    Parents of `dest` are made; the file keeps the source's mode.
    """
    sparent, sname = os.path.split(source)
    dparent, dname = os.path.split(dest)
    with dir_fd(sparent) as sdfd, dir_fd(dparent, create=True) as ddfd:
        st = os.stat(sname, dir_fd=sdfd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            raise ToolError("not_regular_file", f"Not a regular file: {source}", {"path": source})
        try:
            os.stat(dname, dir_fd=ddfd, follow_symlinks=False)
        except FileNotFoundError:
            pass
        else:
            raise FileExistsError(errno.EEXIST, "File exists", dest)
        tmp = _write_temp(ddfd, dname, data, stat.S_IMODE(st.st_mode), None, True)
        try:
            os.link(tmp, dname, src_dir_fd=ddfd, dst_dir_fd=ddfd, follow_symlinks=False)  # no replace
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=ddfd)
        try:
            os.unlink(sname, dir_fd=sdfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(dname, dir_fd=ddfd)  # nothing moved after all
            raise
        for fd in (ddfd, sdfd):
            with contextlib.suppress(OSError):
                os.fsync(fd)


def remove_regular_file(path: str) -> None:
    """Unlink a canonical regular file; anything else (symlink, directory, device) is refused."""
    parent, name = os.path.split(path)
    with dir_fd(parent) as dfd:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            raise ToolError("not_regular_file", f"Not a regular file: {path}", {"path": path})
        os.unlink(name, dir_fd=dfd)
        with contextlib.suppress(OSError):
            os.fsync(dfd)


class FileReader:
    """Bounded reads of many already-checked files, the way content search needs them.

    Each file is opened O_NOFOLLOW relative to a descriptor of its directory. Directory descriptors
    (each reached without following symlinks) are kept, up to `MAX_DIR_FDS`, and a subdirectory of
    a kept one is opened with one `openat`, so a walk pays about one open per directory instead of
    one walk from `/` per file.
    """

    MAX_DIR_FDS = 64

    def __init__(self) -> None:
        self._fds: dict[str, int] = {}

    def _dir_fd(self, parent: str) -> int:
        fd = self._fds.get(parent)
        if fd is not None:
            return fd
        up, name = os.path.split(parent)
        up_fd = self._fds.get(up)
        fd = os.open(name, _DIR_FLAGS, dir_fd=up_fd) if up_fd is not None and name else open_dir(parent)
        if len(self._fds) >= self.MAX_DIR_FDS:
            os.close(self._fds.pop(next(iter(self._fds))))
        self._fds[parent] = fd
        return fd

    def read(self, path: str, cap: int) -> tuple[bytes, bool]:
        """Up to `cap` bytes of the regular file `path`, and whether the file was longer.

        Raises OSError (missing, unreadable) or ToolError (not a regular file, path changed).
        """
        parent, name = os.path.split(path)
        try:
            dfd = self._dir_fd(parent)
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENOTDIR):
                raise _changed(path) from None
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                if stat.S_ISDIR(st.st_mode):
                    raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
                raise world_error("invalid_path", f"Not a regular file: {path}", {"path": path})
            size = st.st_size
            want = min(size, cap) + 1  # one byte more tells a file that grew past the cap
            chunks: list[bytes] = []
            got = 0
            while got < want:
                chunk = os.read(fd, want - got)
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
                if got == size < cap:
                    break  # all of the size fstat reported, under the cap: no read just to see EOF
        finally:
            os.close(fd)
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        if len(data) > cap:
            return data[:cap], True
        return data, False

    def close(self) -> None:
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            os.close(fd)

    def __enter__(self) -> FileReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
