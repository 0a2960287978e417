# Runs a command under the seccomp rules of systemd's MemoryDenyWriteExecute=yes (seccomp-util.c,
# seccomp_memory_deny_write_execute): mmap with PROT_WRITE and PROT_EXEC together, mprotect and
# pkey_mprotect adding PROT_EXEC, shmat with SHM_EXEC fail with EPERM. libseccomp through ctypes,
# so nothing is built. Usage: python3 mdwe.py COMMAND [ARG…]
import ctypes, os, sys

lib = ctypes.CDLL('libseccomp.so.2')

class Cmp(ctypes.Structure):
    _fields_ = [('arg', ctypes.c_uint), ('op', ctypes.c_int), ('datum_a', ctypes.c_uint64), ('datum_b', ctypes.c_uint64)]

SCMP_ACT_ALLOW = 0x7fff0000
SCMP_ACT_EPERM = 0x00050000 | 1
SCMP_CMP_MASKED_EQ = 7
PROT_WRITE, PROT_EXEC, SHM_EXEC = 0x2, 0x4, 0o100000

lib.seccomp_init.restype = ctypes.c_void_p
lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(Cmp)]
lib.seccomp_load.argtypes = [ctypes.c_void_p]

ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
for name, arg, bits in (('mmap', 2, PROT_WRITE | PROT_EXEC), ('mprotect', 2, PROT_EXEC), ('pkey_mprotect', 2, PROT_EXEC), ('shmat', 2, SHM_EXEC)):
    rule = (Cmp * 1)(Cmp(arg, SCMP_CMP_MASKED_EQ, bits, bits))
    if lib.seccomp_rule_add_array(ctx, SCMP_ACT_EPERM, lib.seccomp_syscall_resolve_name(name.encode()), 1, rule) != 0:
        sys.exit(f'mdwe.py: cannot add the rule for {name}')
if lib.seccomp_load(ctx) != 0:
    sys.exit('mdwe.py: cannot load the filter')
os.execvp(sys.argv[1], sys.argv[1:])
