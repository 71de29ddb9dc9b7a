//! The agent's seccomp filter, installed by the sandbox's PID 1 in the agent's process just
//! before it is executed (after `NO_NEW_PRIVS`, which lets an unprivileged process install one,
//! and inherited by everything the agent starts).
//!
//! It has one job: memory that no process maps is memory the watchdog cannot see. A
//! `memfd_create` file is such memory: written but never mapped, it is counted in no
//! process's `/proc/<pid>/status`, and each may grow to `RLIMIT_FSIZE`, times the open-file
//! limit. So `memfd_create` (and `memfd_secret`, the same thing kept from the kernel's own
//! view) fail with `EPERM`, in either enforcement mode, so that an agent behaves the same on
//! every machine. Every other system call is allowed. A system call of another architecture
//! than the build's (a 32-bit `int 0x80` on x86-64, say), whose numbers the filter does not
//! check, kills the process instead.

/// `AUDIT_ARCH_*` of this build: the architecture field of every system call the filter allows.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;
#[cfg(target_arch = "riscv64")]
const AUDIT_ARCH: u32 = 0xC000_00F3;

/// On x86-64 the x32 ABI shares the architecture and marks its system call numbers with this
/// bit; the filter clears it, so an x32 `memfd_create` is refused too.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;
#[cfg(not(target_arch = "x86_64"))]
const X32_SYSCALL_BIT: u32 = 0;

// Classic BPF opcodes (`linux/filter.h`): BPF_LD|BPF_W|BPF_ABS, BPF_ALU|BPF_AND|BPF_K,
// BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K.
const BPF_LD_W_ABS: u16 = 0x20;
const BPF_ALU_AND_K: u16 = 0x54;
const BPF_JMP_JEQ_K: u16 = 0x15;
const BPF_RET_K: u16 = 0x06;
/// Offsets in `struct seccomp_data`.
const NR_OFFSET: u32 = 0;
const ARCH_OFFSET: u32 = 4;

/// The system calls refused with `EPERM`.
const REFUSED: [libc::c_long; 2] = [libc::SYS_memfd_create, libc::SYS_memfd_secret];

fn statement(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump_if_equal(k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: BPF_JMP_JEQ_K,
        jt,
        jf,
        k,
    }
}

/// The filter's program.
fn program() -> Vec<libc::sock_filter> {
    let refused = REFUSED.len() as u8;
    let mut program = vec![
        statement(BPF_LD_W_ABS, ARCH_OFFSET),
        // The build's architecture goes on; any other is killed.
        jump_if_equal(AUDIT_ARCH, 1, 0),
        statement(BPF_RET_K, libc::SECCOMP_RET_KILL_PROCESS),
        statement(BPF_LD_W_ABS, NR_OFFSET),
        statement(BPF_ALU_AND_K, !X32_SYSCALL_BIT),
    ];
    for (i, nr) in REFUSED.iter().enumerate() {
        // A match jumps past the remaining comparisons and the ALLOW to the ERRNO.
        let to_errno = refused - i as u8;
        program.push(jump_if_equal(*nr as u32, to_errno, 0));
    }
    program.push(statement(BPF_RET_K, libc::SECCOMP_RET_ALLOW));
    program.push(statement(
        BPF_RET_K,
        libc::SECCOMP_RET_ERRNO | (libc::EPERM as u32 & libc::SECCOMP_RET_DATA),
    ));
    program
}

/// Installs the filter in this process (and so in everything it starts). Needs
/// `NO_NEW_PRIVS` (or `CAP_SYS_ADMIN`).
pub(super) fn install() -> std::io::Result<()> {
    let program = program();
    let fprog = libc::sock_fprog {
        len: program.len() as libc::c_ushort,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: the kernel copies the program, which outlives the call, and reads nothing else.
    let rc = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            &fprog as *const libc::sock_fprog,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the program the way the kernel would on one system call.
    fn verdict(arch: u32, nr: u32) -> u32 {
        let program = program();
        let (mut pc, mut a) = (0usize, 0u32);
        loop {
            let s = program[pc];
            pc += 1;
            match s.code {
                BPF_LD_W_ABS => a = if s.k == ARCH_OFFSET { arch } else { nr },
                BPF_ALU_AND_K => a &= s.k,
                BPF_JMP_JEQ_K => pc += usize::from(if a == s.k { s.jt } else { s.jf }),
                BPF_RET_K => return s.k,
                other => panic!("unexpected instruction {other:#x}"),
            }
        }
    }

    #[test]
    fn memfd_is_refused_and_everything_else_allowed() {
        let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        for nr in REFUSED {
            assert_eq!(verdict(AUDIT_ARCH, nr as u32), eperm);
            assert_eq!(verdict(AUDIT_ARCH, nr as u32 | X32_SYSCALL_BIT), eperm);
        }
        for nr in [
            libc::SYS_read,
            libc::SYS_mmap,
            libc::SYS_execve,
            libc::SYS_clone,
        ] {
            assert_eq!(verdict(AUDIT_ARCH, nr as u32), libc::SECCOMP_RET_ALLOW);
        }
        assert_eq!(
            verdict(0x4000_0003, libc::SYS_read as u32),
            libc::SECCOMP_RET_KILL_PROCESS
        );
    }
}
