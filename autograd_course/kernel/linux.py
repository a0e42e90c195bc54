"""Linux's calls that Python's ``os`` lacks, through ctypes (kernel side: the zygote's toolkit).

Namespaces (:func:`unshare`), mounts (:func:`mount`, :func:`bind_read_only`, :func:`umount`),
``prctl`` and capabilities (:func:`set_capabilities`, :func:`drop_bounding_set`), the loopback
interface (:func:`loopback_up`) and ``/proc/self/status`` (:func:`status_fields`), with the
constants they take. Each call raises :class:`OSError` when Linux refuses it; none decides
anything: :mod:`autograd_course.kernel.zygote` does.
"""

from __future__ import annotations

import ctypes
import os

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 32, 4096, 8192, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
MNT_DETACH = 2
#: statvfs's flags of a mount (os.ST_*) and mount(2)'s that keep them in a remount.
_KEPT_FLAGS = ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
               (os.ST_NOATIME, MS_NOATIME), (os.ST_NODIRATIME, MS_NODIRATIME),
               (os.ST_RELATIME, MS_RELATIME))
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 24, 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
CAP_SETGID, CAP_SETUID, CAP_SETPCAP, CAP_NET_ADMIN, CAP_SYS_ADMIN = 6, 7, 8, 12, 21
SIOCSIFFLAGS, IFF_UP, IFF_RUNNING = 0x8914, 0x1, 0x40

_libc = ctypes.CDLL(None, use_errno=True)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _check(result: int, what: str) -> int:
    if result == -1:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")
    return result


def unshare(flags: int) -> None:
    """Linux's unshare(2) (Python 3.11's ``os`` has none)."""
    _check(_libc.unshare(flags), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int = 0,
          data: str | None = None) -> None:
    """Linux's mount(2)."""
    _check(_libc.mount(_bytes(source), _bytes(target), _bytes(fstype), ctypes.c_ulong(flags),
                       _bytes(data)), f"mount {target}")


def bind_read_only(source: str, target: str, recursive: bool = False) -> None:
    """Bind ``source`` at ``target``, read-only. The remount keeps the flags the mount has
    (in a user namespace of its own, Linux refuses a remount that would drop a flag its owner
    locked: nosuid, nodev, noexec, the atime ones)."""
    mount(source, target, None, MS_BIND | (MS_REC if recursive else 0))
    flags = os.statvfs(target).f_flag
    kept = sum(ms for st, ms in _KEPT_FLAGS if flags & st)
    mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | kept)


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else os.fsencode(text)


def umount(target: str) -> None:
    _check(_libc.umount2(os.fsencode(target), MNT_DETACH), f"umount {target}")


def prctl(option: int, arg: int = 0) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), f"prctl {option}")


def set_capabilities(caps: tuple[int, ...]) -> None:
    """Make ``caps`` this process's effective and permitted capabilities, and none other
    (inheritable: none)."""
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3: two 32-bit words
    data = (_CapData * 2)()
    for cap in caps:
        word, bit = divmod(cap, 32)
        data[word].effective |= 1 << bit
        data[word].permitted |= 1 << bit
    _check(_libc.capset(ctypes.byref(header), data), "capset")


def last_capability() -> int:
    with open("/proc/sys/kernel/cap_last_cap") as f:
        return int(f.read())


def drop_bounding_set(keep: tuple[int, ...] = ()) -> None:
    """Remove every capability but ``keep`` from this process's bounding set."""
    for cap in range(last_capability() + 1):
        if cap not in keep:
            _check(_libc.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0), "capbset")


def status_fields(*names: str) -> dict[str, str]:
    """Fields of /proc/self/status (``CapEff``, ``NoNewPrivs``...)."""
    with open("/proc/self/status") as f:
        pairs = (line.split(":", 1) for line in f if ":" in line)
        return {k: v.strip() for k, v in pairs if k in names}



def loopback_up() -> None:
    """Bring up the new network namespace's loopback (and nothing else is there)."""
    import fcntl
    import socket
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", IFF_UP | IFF_RUNNING))
