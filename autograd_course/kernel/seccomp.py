"""The system-call filter of every grading kernel (seccomp), and its keyrings (kernel side).

Behind the sandbox (:mod:`autograd_course.grading.boundary.sandbox`), the filter refuses the
Linux interfaces a notebook never needs (:data:`REFUSED`, one line of why each). Why, and the
details: docs/design.md#autograd_coursekernelseccomppy. Rules:

- classic BPF built here (:func:`program`; :func:`evaluate` runs it in the tests);
- anything but x86_64's own ABI is refused; machines without a table here run unfiltered, and
  every grade record says so (``sandbox.SECCOMP_OFF``);
- a refused call returns ``EPERM``, never a kill; ``clone`` is refused only with a namespace
  flag, and ``clone3`` answers ``ENOSYS``;
- installed with ``no_new_privs``, after the kernel's set-up and before ipykernel: by
  :func:`install` in a warm kernel's child (:mod:`autograd_course.kernel.zygote`), by
  :func:`main` for a cold kernel, which then execs ipykernel;
- before the filter the kernel joins a session keyring of its own (:func:`fresh_session_keyring`).

``python -m autograd_course.kernel.seccomp [--filter] -- ARGV`` launches ``ARGV`` (a cold
kernel); ``--probe`` installs the filter and checks it; ``--table`` prints what is refused.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC = 1, 1
PR_SET_NO_NEW_PRIVS = 38
SYS_SECCOMP, SYS_CLONE, SYS_CLONE3 = 317, 56, 435
#: keyctl(2)'s number, by machine (the session keyring is joined on each).
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}
KEYCTL_JOIN_SESSION_KEYRING = 1
#: clone's namespace flags (NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET).
CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 \
    | 0x20000000 | 0x40000000

#: What is refused (x86_64's numbers), and why a notebook never needs it.
REFUSED: dict[str, tuple[int, str]] = {
    # keyrings: a user's keyrings outlive its processes
    "add_key": (248, "a key outlives the kernel: a message to the next kernel of the same uid"),
    "request_key": (249, "the same keyrings, searched or filled"),
    "keyctl": (250, "reads, links and changes keys: the same keyrings"),
    # other processes
    "ptrace": (101, "reads and changes other processes (its PID 1, its children)"),
    "process_vm_readv": (310, "ptrace's access to another process's memory"),
    "process_vm_writev": (311, "ptrace's access to another process's memory"),
    "kcmp": (312, "compares other processes' resources (ptrace's checks)"),
    "pidfd_getfd": (438, "takes another process's file descriptors"),
    # Linux's attack surface, reachable without privilege
    "bpf": (321, "loads programs into Linux: attack surface only"),
    "perf_event_open": (298, "hardware counters: side channels, attack surface"),
    "userfaultfd": (323, "stalls Linux at a page fault: widens kernel races for exploits"),
    "io_uring_setup": (425, "its operations bypass this filter"),
    "io_uring_enter": (426, "its operations bypass this filter"),
    "io_uring_register": (427, "its operations bypass this filter"),
    # file systems: the sandbox's are fixed before the notebook runs
    "mount": (165, "the sandbox's mounts are fixed"),
    "umount2": (166, "the sandbox's mounts are fixed (uncovers what they hide)"),
    "pivot_root": (155, "the sandbox's root is fixed"),
    "chroot": (161, "the sandbox's root is fixed"),
    "open_tree": (428, "the new mount API: as mount"),
    "move_mount": (429, "the new mount API: as mount"),
    "fsopen": (430, "the new mount API: as mount"),
    "fsconfig": (431, "the new mount API: as mount"),
    "fsmount": (432, "the new mount API: as mount"),
    "fspick": (433, "the new mount API: as mount"),
    "mount_setattr": (442, "the new mount API: as mount"),
    "open_tree_attr": (467, "the new mount API: as mount (Linux 6.15)"),
    "open_by_handle_at": (304, "opens files by handle, around the mount tree"),
    # namespaces: a new user namespace gives back every capability inside it
    "unshare": (272, "new namespaces (a user namespace: capabilities again, mount)"),
    "setns": (308, "enters other namespaces"),
    # Linux itself
    "kexec_load": (246, "replaces the running Linux"),
    "kexec_file_load": (320, "replaces the running Linux"),
    "init_module": (175, "loads code into Linux"),
    "finit_module": (313, "loads code into Linux"),
    "delete_module": (176, "unloads code from Linux"),
    "reboot": (169, "the machine is not the notebook's"),
    "swapon": (167, "the machine's swap is not the notebook's"),
    "swapoff": (168, "the machine's swap is not the notebook's"),
    "acct": (163, "the machine's process accounting"),
    "syslog": (103, "Linux's log: traces of other kernels and the grader"),
    "iopl": (172, "hardware I/O ports"),
    "ioperm": (173, "hardware I/O ports"),
}
#: Refused only with a namespace flag (:data:`CLONE_NAMESPACES`), or answered ENOSYS.
CONDITIONAL = {
    "clone": (SYS_CLONE, "EPERM with a namespace flag (fork, threads and vfork pass)"),
    "clone3": (SYS_CLONE3, "ENOSYS: its flags are in memory; glibc falls back to clone"),
}

# classic BPF: the few instructions this program uses
_LD_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW = SECCOMP_RET_ALLOW
_EPERM = SECCOMP_RET_ERRNO | errno.EPERM
_ENOSYS = SECCOMP_RET_ERRNO | errno.ENOSYS
# offsets in struct seccomp_data: nr, arch, args[0]'s low word (little-endian)
_NR, _ARCH, _ARG0 = 0, 4, 16


def program() -> list[tuple[int, int, int, int]]:
    """The filter: (code, jump if true, jump if false, k) for each instruction."""
    body: list[tuple] = [
        (_LD_ABS, 0, 0, _ARCH),
        (_JEQ, 0, "refuse", AUDIT_ARCH_X86_64),
        (_LD_ABS, 0, 0, _NR),
        (_JGE, "refuse", 0, X32_SYSCALL_BIT),
        *((_JEQ, "refuse", 0, number) for number, _ in sorted(REFUSED.values())),
        (_JEQ, "enosys", 0, SYS_CLONE3),
        (_JEQ, 0, "allow", SYS_CLONE),
        (_LD_ABS, 0, 0, _ARG0),
        (_JSET, "refuse", 0, CLONE_NAMESPACES),
    ]
    ends = {"allow": _ALLOW, "refuse": _EPERM, "enosys": _ENOSYS}
    at = {name: len(body) + i for i, name in enumerate(ends)}
    code = []
    for i, (op, true, false, k) in enumerate(body):
        jumps = [at[j] - i - 1 if isinstance(j, str) else j for j in (true, false)]
        assert all(0 <= j < 256 for j in jumps)
        code.append((op, *jumps, k))
    return code + [(_RET, 0, 0, k) for k in ends.values()]


def assemble() -> bytes:
    """The program as Linux reads it (``struct sock_filter``'s)."""
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in program())


def evaluate(nr: int, arch: int = AUDIT_ARCH_X86_64, arg0: int = 0,
             code: list[tuple[int, int, int, int]] | None = None) -> int:
    """What the filter returns for one call (``SECCOMP_RET_*`` | errno), by running its
    instructions as Linux would (the tests decode and check it with this)."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    code = program() if code is None else code
    pc, acc = 0, 0
    while True:
        op, true, false, k = code[pc]
        pc += 1
        if op == _LD_ABS:
            acc = struct.unpack_from("=I", data, k)[0]
        elif op == _RET:
            return k
        else:
            taken = {_JEQ: acc == k, _JGE: acc >= k, _JSET: bool(acc & k)}[op]
            pc += true if taken else false


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno() if result == -1 else errno.EBUSY  # TSYNC: a thread's id
        raise OSError(code, f"{what}: {os.strerror(code)}")


def install() -> None:
    """Set ``no_new_privs`` and install the filter on every thread of this process; raises
    OSError where it cannot (another machine, no seccomp in this Linux)."""
    if os.uname().machine != "x86_64":
        raise OSError(errno.ENOSYS, f"no system-call filter for {os.uname().machine}")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), 0, 0, 0), "no_new_privs")
    text = assemble()
    buffer = ctypes.create_string_buffer(text, len(text))
    fprog = _Fprog(len(text) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    _check(_libc.syscall(SYS_SECCOMP, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC,
                         ctypes.byref(fprog)), "seccomp")


def fresh_session_keyring() -> None:
    """Join a new, empty session keyring (not the grader's, which this process inherited);
    where keyctl is missing or refused there is nothing to join."""
    number = SYS_KEYCTL.get(os.uname().machine)
    if number is not None:
        _libc.syscall(number, KEYCTL_JOIN_SESSION_KEYRING, None)


def _probe() -> int:
    """Install the filter here and check that it refuses keyctl and allows getpid."""
    install()
    refused = _libc.syscall(REFUSED["keyctl"][0], 0, -3, 0) == -1 and (
        ctypes.get_errno() == errno.EPERM)
    return 0 if refused and _libc.syscall(39) == os.getpid() else 1


def main(argv: list[str]) -> int:
    if argv == ["--probe"]:
        try:
            return _probe()
        except OSError as exc:
            print(f"no system-call filter here: {exc}", file=sys.stderr)
            return 1
    if argv == ["--table"]:
        for name, (number, why) in sorted({**REFUSED, **CONDITIONAL}.items(),
                                          key=lambda item: item[1][0]):
            print(f"{number:4} {name:18} {why}")
        return 0
    filtered = argv[:1] == ["--filter"]
    rest = argv[1:] if filtered else argv
    if rest[:1] != ["--"] or len(rest) < 2:
        print("usage: python -m autograd_course.kernel.seccomp [--filter] -- ARGV | --probe "
              "| --table", file=sys.stderr)
        return 2
    fresh_session_keyring()
    if filtered:
        try:
            install()
        except OSError as exc:  # asked for the filter: the kernel does not start without it
            print(f"the grading kernel's system-call filter failed: {exc}", file=sys.stderr)
            return 70
    os.execv(rest[1], rest[1:])
    return 70  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
