"""A seccomp filter for sandboxes, assembled as classic BPF (what ``bwrap --seccomp FD`` reads).

It refuses the system calls a sandbox never needs and that widen the kernel's
attack surface: new namespaces and mounts, ptrace, keyrings, bpf, io_uring,
perf, module and kexec loading, reboot, and the x32 ABI. ``clone`` is refused
only with namespace flags; ``clone3`` (whose flags hide in a struct) answers
ENOSYS so the C library falls back to ``clone``. Everything else is allowed.

Only x86-64 is supported; elsewhere :func:`build_filter` returns ``None`` and
the backend says it runs without seccomp.
"""

from __future__ import annotations

import errno
import platform
import struct

# classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h)
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000
_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_BIT = 0x40000000
# offsets in struct seccomp_data: nr, arch, instruction pointer, args[6]
_OFF_NR, _OFF_ARCH, _OFF_ARG0_LOW = 0, 4, 16
_CLONE_NAMESPACE_FLAGS = 0x7E020000  # NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET

X86_64_DENIED: dict[str, int] = {
    "ptrace": 101, "personality": 135, "vhangup": 153, "pivot_root": 155, "acct": 163, "mount": 165,
    "umount2": 166, "swapon": 167, "swapoff": 168, "reboot": 169, "sethostname": 170, "setdomainname": 171,
    "iopl": 172, "ioperm": 173, "init_module": 175, "delete_module": 176, "quotactl": 179,
    "lookup_dcookie": 212, "kexec_load": 246, "add_key": 248, "request_key": 249, "keyctl": 250,
    "unshare": 272, "perf_event_open": 298, "name_to_handle_at": 303, "open_by_handle_at": 304, "setns": 308,
    "process_vm_readv": 310, "process_vm_writev": 311, "finit_module": 313, "kexec_file_load": 320, "bpf": 321,
    "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "mount_setattr": 442,
}
_X86_64_CLONE, _X86_64_CLONE3 = 56, 435


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _x86_64_program() -> bytes:
    eperm, enosys = _RET_ERRNO | errno.EPERM, _RET_ERRNO | errno.ENOSYS
    program = [
        _insn(_LD_W_ABS, _OFF_ARCH),
        _insn(_JEQ_K, _AUDIT_ARCH_X86_64, jt=1),
        _insn(_RET_K, _RET_KILL_PROCESS),  # a foreign ABI (i386 int 0x80) is never legitimate here
        _insn(_LD_W_ABS, _OFF_NR),
        _insn(_JGE_K, _X32_BIT, jf=1),
        _insn(_RET_K, eperm),
    ]
    for number in sorted(X86_64_DENIED.values()):
        program += [_insn(_JEQ_K, number, jf=1), _insn(_RET_K, eperm)]
    program += [
        _insn(_JEQ_K, _X86_64_CLONE3, jf=1),
        _insn(_RET_K, enosys),
        _insn(_JEQ_K, _X86_64_CLONE, jf=3),
        _insn(_LD_W_ABS, _OFF_ARG0_LOW),
        _insn(_JSET_K, _CLONE_NAMESPACE_FLAGS, jf=1),
        _insn(_RET_K, eperm),
        _insn(_RET_K, _RET_ALLOW),
    ]
    return b"".join(program)


def build_filter(machine: str | None = None) -> bytes | None:
    """The compiled filter for this machine's architecture, or ``None`` where none is written."""
    if (machine or platform.machine()) in ("x86_64", "AMD64"):
        return _x86_64_program()
    return None


__all__ = ["build_filter", "X86_64_DENIED"]
