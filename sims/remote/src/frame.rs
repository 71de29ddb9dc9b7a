//! The protocol's framing: a 4-byte little-endian length, then that many bytes of one encoded
//! message. Reading and writing take a deadline, so a host that stops answering (or stops
//! reading) costs the evaluator at most its per-call timeout.

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::time::Instant;

/// Why a frame could not be moved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FrameError {
    #[error("it did not answer within {0:.1} s")]
    Timeout(f64),
    #[error("it closed its end of the pipe")]
    Closed,
    #[error("it sent a frame of {got} bytes, more than the {max} allowed")]
    TooLong { got: u64, max: u64 },
    #[error("I/O on its pipe failed: {0}")]
    Io(String),
}

/// Sets `O_NONBLOCK` on the evaluator's end of a pipe (the host's end keeps its own flags).
pub fn set_nonblocking(fd: &impl AsRawFd) -> std::io::Result<()> {
    // SAFETY: fcntl on a descriptor we own; no memory is touched.
    unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Waits until `fd` is ready for `events` or `deadline` passes.
fn wait(
    fd: &impl AsFd,
    events: libc::c_short,
    deadline: Instant,
    timeout: f64,
) -> Result<(), FrameError> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(FrameError::Timeout(timeout));
        }
        let mut poll = libc::pollfd {
            fd: fd.as_fd().as_raw_fd(),
            events,
            revents: 0,
        };
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: one pollfd that lives across the call.
        let n = unsafe { libc::poll(&mut poll, 1, ms) };
        if n > 0 {
            return Ok(());
        }
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(FrameError::Io(e.to_string()));
            }
        }
    }
}

/// Writes all of `bytes` to a non-blocking `out` before `deadline` (`timeout` is the seconds
/// it stands for, for the error).
pub fn write_all<W: Write + AsFd>(
    out: &mut W,
    mut bytes: &[u8],
    deadline: Instant,
    timeout: f64,
) -> Result<(), FrameError> {
    while !bytes.is_empty() {
        match out.write(bytes) {
            Ok(0) => return Err(FrameError::Closed),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                wait(out, libc::POLLOUT, deadline, timeout)?
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Err(FrameError::Closed),
            Err(e) => return Err(FrameError::Io(e.to_string())),
        }
    }
    Ok(())
}

/// Fills `buf` from a non-blocking `input` before `deadline`.
fn read_exact<R: Read + AsFd>(
    input: &mut R,
    buf: &mut [u8],
    deadline: Instant,
    timeout: f64,
) -> Result<(), FrameError> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => return Err(FrameError::Closed),
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                wait(input, libc::POLLIN, deadline, timeout)?
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(FrameError::Io(e.to_string())),
        }
    }
    Ok(())
}

/// Writes one frame holding `message` (`scratch` is reused between calls).
pub fn write_frame<W: Write + AsFd>(
    out: &mut W,
    message: &impl prost::Message,
    scratch: &mut Vec<u8>,
    deadline: Instant,
    timeout: f64,
) -> Result<(), FrameError> {
    scratch.clear();
    let len = message.encoded_len();
    let prefix = u32::try_from(len).map_err(|_| FrameError::TooLong {
        got: len as u64,
        max: u32::MAX.into(),
    })?;
    scratch.extend_from_slice(&prefix.to_le_bytes());
    message
        .encode(scratch)
        .map_err(|e| FrameError::Io(e.to_string()))?;
    write_all(out, scratch, deadline, timeout)
}

/// Reads one frame of at most `max` bytes into `scratch` and returns its bytes.
pub fn read_frame<'a, R: Read + AsFd>(
    input: &mut R,
    scratch: &'a mut Vec<u8>,
    max: u64,
    deadline: Instant,
    timeout: f64,
) -> Result<&'a [u8], FrameError> {
    let mut prefix = [0u8; 4];
    read_exact(input, &mut prefix, deadline, timeout)?;
    let len = u64::from(u32::from_le_bytes(prefix));
    if len > max {
        return Err(FrameError::TooLong { got: len, max });
    }
    scratch.clear();
    scratch.resize(len as usize, 0);
    read_exact(input, scratch, deadline, timeout)?;
    Ok(scratch)
}
