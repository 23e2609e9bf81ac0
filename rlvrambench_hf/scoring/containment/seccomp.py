"""A seccomp filter that takes from user code every way to act on the command that runs it: no signal to the
command or to its keeper (by pid, by their process groups, or to every process with ``-1``), no ``tkill``, no
pidfd signals, no ``ptrace``, no reading or writing another process's memory, no file descriptors taken from
another process. Each refused call fails with ``EPERM``; everything else is allowed. A filter is inherited by every
process user code starts, and cannot be removed.

Written for Linux on x86-64 and AArch64 (classic BPF through ``prctl(PR_SET_SECCOMP)``, as libseccomp would emit
it); elsewhere :func:`install` returns False and the command watches for stops instead (see :mod:`.keeper`).
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct
from collections.abc import Iterable

from .procs import LINUX, PR_SET_NO_NEW_PRIVS, libc, prctl

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
_LD, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_RET|K
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_X32 = 0x40000000
#: Per architecture: its audit id, then the calls refused outright and the calls whose first argument (a pid or a
#: thread group id) is checked against the protected ones.
_CALLS = {
    "x86_64": (
        0xC000003E,
        {"tkill": 200, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312},
        {"kill": 62, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297},
    ),
    "aarch64": (
        0xC00000B7,
        {"tkill": 130, "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272},
        {"kill": 129, "tgkill": 131, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240},
    ),
}
_COMMON_REFUSED = {"pidfd_send_signal": 424, "pidfd_getfd": 438}
_PIDFD_OPEN = 434


def supported() -> bool:
    return LINUX and platform.machine() in _CALLS


def program(protected: Iterable[int], groups: Iterable[int]) -> list[tuple[int, int, int, int]]:
    """The filter's instructions (code, jt, jf, k): ``protected`` pids may not be signalled (nor opened as a pidfd),
    nor may the process groups ``groups``, nor every process at once."""
    arch, refused, checked = _CALLS[platform.machine()]
    pids = sorted({p & 0xFFFFFFFF for p in protected if p > 0})
    targets = sorted({*pids, *((-g) & 0xFFFFFFFF for g in groups if g > 0), 0xFFFFFFFF})
    code: list[tuple[int, str | None, str | None, int]] = [
        (_LD, None, None, 4),
        (_JEQ, None, "deny", arch),
        (_LD, None, None, 0),
    ]
    if arch == _CALLS["x86_64"][0]:
        code.append((_JGE, "deny", None, _X32))  # the x32 numbering of the same calls
    for number in (*refused.values(), *_COMMON_REFUSED.values()):
        code.append((_JEQ, "deny", None, number))
    code.append((_JEQ, "pids", None, _PIDFD_OPEN))
    for number in checked.values():
        code.append((_JEQ, "targets", None, number))
    code.append((_RET, None, None, _ALLOW))
    for label, values in (("pids", pids), ("targets", targets)):
        code.append((_LD, label, None, 16))  # the low half of the first argument (little-endian)
        code += [(_JEQ, "deny", None, value) for value in values]
        code.append((_RET, None, None, _ALLOW))
    code.append((_RET, "deny", None, _ERRNO | errno.EPERM))
    return _assemble(code)


def _assemble(code: list[tuple[int, str | None, str | None, int]]) -> list[tuple[int, int, int, int]]:
    """Resolve jump labels: a label names the instruction whose own ``jt`` slot holds it when it is not a jump."""
    where: dict[str, int] = {}
    for index, (op, jt, _, _) in enumerate(code):
        if op in (_LD, _RET) and jt is not None:
            where[jt] = index
    out = []
    for index, (op, jt, jf, k) in enumerate(code):
        if op in (_LD, _RET):
            out.append((op, 0, 0, k))
            continue
        out.append((op, where[jt] - index - 1 if jt else 0, where[jf] - index - 1 if jf else 0, k))
    if any(not 0 <= jt < 256 or not 0 <= jf < 256 for _, jt, jf, _ in out):
        raise ValueError("a seccomp jump beyond 255 instructions")
    return out


def install(protected: Iterable[int], groups: Iterable[int]) -> bool:
    """Install the filter on the calling process (no new privileges first, as seccomp requires); whether it is on."""
    if not supported():
        return False
    instructions = program(protected, groups)
    raw = b"".join(struct.pack("=HBBI", *instruction) for instruction in instructions)
    buffer = ctypes.create_string_buffer(raw, len(raw))

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Program(len(instructions), ctypes.addressof(buffer))
    if not prctl(PR_SET_NO_NEW_PRIVS, 1):
        return False
    try:
        done = libc().prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0)
    except (OSError, AttributeError):
        return False
    return int(done) == 0


def active(pid: int | str = "self") -> bool:
    """Whether process ``pid`` runs under a seccomp filter."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            return any(line.split() == ["Seccomp:", "2"] for line in status)
    except OSError:
        return False
