// The seccomp filter every sandboxed process runs under, as a classic BPF program that
// bubblewrap installs (`--seccomp FD`) just before it executes the command. Written here,
// in a few dozen instructions, rather than taken from a library: @anthropic-ai/sandbox-runtime
// ships only a prebuilt filter that blocks Unix sockets (a different job), and libseccomp
// would need a compiler and -dev headers at install time for what is a fixed, short list.
// The program is the same on every machine of an architecture, so it can be read and tested.
//
// What it refuses (EPERM): syscalls that reach past the namespaces bubblewrap builds —
// tracing other processes, mounting, making or entering namespaces (also through clone
// flags), file handles that bypass the mount tree, kernel keyrings, BPF, perf, loading
// kernel code or modules, and faking terminal input (TIOCSTI, TIOCLINUX). A syscall made
// through another ABI (i386 or x32 on x86_64) is refused as a whole: the table only holds
// the native numbers.

export type SeccompArch = 'x64' | 'arm64';

/** Syscalls refused outright, by name; numbers per architecture below. */
export const REFUSED_SYSCALLS = [
  'ptrace',
  'process_vm_readv',
  'process_vm_writev',
  'mount',
  'umount2',
  'pivot_root',
  'chroot',
  'open_tree',
  'move_mount',
  'fsopen',
  'fsconfig',
  'fsmount',
  'fspick',
  'mount_setattr',
  'unshare',
  'setns',
  'open_by_handle_at',
  'name_to_handle_at',
  'keyctl',
  'add_key',
  'request_key',
  'bpf',
  'perf_event_open',
  'userfaultfd',
  'kexec_load',
  'kexec_file_load',
  'init_module',
  'finit_module',
  'delete_module',
  'swapon',
  'swapoff',
  'reboot',
  'acct',
  'syslog',
] as const;
type RefusedSyscall = (typeof REFUSED_SYSCALLS)[number];

interface ArchTable {
  /** AUDIT_ARCH_* as the kernel reports it in seccomp_data.arch. */
  audit: number;
  numbers: Record<RefusedSyscall, number>;
  ioctl: number;
  clone: number;
  clone3: number;
  /** Numbers at or above this belong to another ABI (x32); undefined when there is none. */
  foreignAbiFrom?: number;
}

const TABLES: Record<SeccompArch, ArchTable> = {
  x64: {
    audit: 0xc000003e,
    ioctl: 16,
    clone: 56,
    clone3: 435,
    foreignAbiFrom: 0x40000000,
    numbers: {
      ptrace: 101,
      process_vm_readv: 310,
      process_vm_writev: 311,
      mount: 165,
      umount2: 166,
      pivot_root: 155,
      chroot: 161,
      open_tree: 428,
      move_mount: 429,
      fsopen: 430,
      fsconfig: 431,
      fsmount: 432,
      fspick: 433,
      mount_setattr: 442,
      unshare: 272,
      setns: 308,
      open_by_handle_at: 304,
      name_to_handle_at: 303,
      keyctl: 250,
      add_key: 248,
      request_key: 249,
      bpf: 321,
      perf_event_open: 298,
      userfaultfd: 323,
      kexec_load: 246,
      kexec_file_load: 320,
      init_module: 175,
      finit_module: 313,
      delete_module: 176,
      swapon: 167,
      swapoff: 168,
      reboot: 169,
      acct: 163,
      syslog: 103,
    },
  },
  arm64: {
    audit: 0xc00000b7,
    ioctl: 29,
    clone: 220,
    clone3: 435,
    numbers: {
      ptrace: 117,
      process_vm_readv: 270,
      process_vm_writev: 271,
      mount: 40,
      umount2: 39,
      pivot_root: 41,
      chroot: 51,
      open_tree: 428,
      move_mount: 429,
      fsopen: 430,
      fsconfig: 431,
      fsmount: 432,
      fspick: 433,
      mount_setattr: 442,
      unshare: 97,
      setns: 268,
      open_by_handle_at: 265,
      name_to_handle_at: 264,
      keyctl: 219,
      add_key: 217,
      request_key: 218,
      bpf: 280,
      perf_event_open: 241,
      userfaultfd: 282,
      kexec_load: 104,
      kexec_file_load: 294,
      init_module: 105,
      finit_module: 273,
      delete_module: 106,
      swapon: 224,
      swapoff: 225,
      reboot: 142,
      acct: 89,
      syslog: 116,
    },
  },
};

/** ioctl requests refused: pushing bytes into a terminal's input queue. */
const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;
/** clone flags that make namespaces: CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET|NEWTIME. */
const CLONE_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080;

// Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
const BPF_LD_W_ABS = 0x20;
const BPF_JMP_JEQ_K = 0x15;
const BPF_JMP_JGE_K = 0x35;
const BPF_JMP_JSET_K = 0x45;
const BPF_RET_K = 0x06;
const SECCOMP_RET_KILL_PROCESS = 0x80000000;
const SECCOMP_RET_ERRNO = 0x00050000;
const SECCOMP_RET_ALLOW = 0x7fff0000;
const EPERM = 1;
const ENOSYS = 38;
// Offsets in struct seccomp_data: nr (u32), arch (u32), ip (u64), args[6] (u64, little-endian).
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const argLow = (n: number) => 16 + 8 * n;

interface Instruction {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

/** The architecture of this process, when the filter knows it. */
export function currentSeccompArch(arch: string = process.arch): SeccompArch | undefined {
  return arch === 'x64' || arch === 'arm64' ? arch : undefined;
}

/** The filter as the bytes bubblewrap reads: an array of struct sock_filter, host-endian (both arches are little-endian). */
export function seccompFilter(arch: SeccompArch): Buffer {
  const program = seccompProgram(arch);
  const out = Buffer.alloc(program.length * 8);
  program.forEach((ins, i) => {
    out.writeUInt16LE(ins.code, i * 8);
    out.writeUInt8(ins.jt, i * 8 + 2);
    out.writeUInt8(ins.jf, i * 8 + 3);
    out.writeUInt32LE(ins.k >>> 0, i * 8 + 4);
  });
  return out;
}

/**
 * The program, built from labels so that jump offsets are computed, not counted by hand.
 * Layout: arch check, foreign ABI check, one compare per refused number, clone/clone3,
 * ioctl, then the shared return blocks.
 */
export function seccompProgram(arch: SeccompArch): Instruction[] {
  const table = TABLES[arch];
  type Target = 'allow' | 'eperm' | 'enosys' | 'kill' | 'clone' | 'ioctl' | 'next';
  const body: { ins: Instruction; jt?: Target; jf?: Target; label?: Target }[] = [];
  const op = (code: number, k: number, jt?: Target, jf?: Target, label?: Target) => body.push({ ins: { code, jt: 0, jf: 0, k }, jt, jf, label });

  op(BPF_LD_W_ABS, OFFSET_ARCH);
  op(BPF_JMP_JEQ_K, table.audit, 'next', 'kill');
  op(BPF_LD_W_ABS, OFFSET_NR);
  if (table.foreignAbiFrom !== undefined) op(BPF_JMP_JGE_K, table.foreignAbiFrom, 'eperm', 'next');
  for (const name of REFUSED_SYSCALLS) op(BPF_JMP_JEQ_K, table.numbers[name], 'eperm', 'next');
  // clone3 passes its flags in memory the filter cannot read: make the C library fall back to clone.
  op(BPF_JMP_JEQ_K, table.clone3, 'enosys', 'next');
  op(BPF_JMP_JEQ_K, table.clone, 'clone', 'next');
  op(BPF_JMP_JEQ_K, table.ioctl, 'ioctl', 'allow');
  // clone: refused when the flags (args[0], low word) ask for any new namespace.
  op(BPF_LD_W_ABS, argLow(0), undefined, undefined, 'clone');
  op(BPF_JMP_JSET_K, CLONE_NAMESPACE_FLAGS, 'eperm', 'allow');
  // ioctl: the request is args[1]; only its low 32 bits count (the kernel truncates it to unsigned int).
  op(BPF_LD_W_ABS, argLow(1), undefined, undefined, 'ioctl');
  op(BPF_JMP_JEQ_K, TIOCSTI, 'eperm', 'next');
  op(BPF_JMP_JEQ_K, TIOCLINUX, 'eperm', 'allow');
  op(BPF_RET_K, SECCOMP_RET_ALLOW, undefined, undefined, 'allow');
  op(BPF_RET_K, SECCOMP_RET_ERRNO | EPERM, undefined, undefined, 'eperm');
  op(BPF_RET_K, SECCOMP_RET_ERRNO | ENOSYS, undefined, undefined, 'enosys');
  op(BPF_RET_K, SECCOMP_RET_KILL_PROCESS, undefined, undefined, 'kill');

  const at = new Map<Target, number>();
  body.forEach((entry, i) => {
    if (entry.label) at.set(entry.label, i);
  });
  const offset = (from: number, target: Target | undefined): number => {
    if (target === undefined || target === 'next') return 0;
    const to = at.get(target);
    if (to === undefined) throw new Error(`seccomp: no label ${target}`);
    const jump = to - from - 1;
    if (jump < 0 || jump > 255) throw new Error(`seccomp: jump to ${target} out of range (${jump})`);
    return jump;
  };
  return body.map((entry, i) => ({ ...entry.ins, jt: offset(i, entry.jt), jf: offset(i, entry.jf) }));
}

/** The number of a syscall the filter knows, on an architecture (for tests that make the raw call). */
export function syscallNumber(arch: SeccompArch, name: RefusedSyscall | 'ioctl' | 'clone' | 'clone3'): number {
  const table = TABLES[arch];
  return name === 'ioctl' || name === 'clone' || name === 'clone3' ? table[name] : table.numbers[name];
}
