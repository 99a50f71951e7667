//! The /dev/zero source ([`super::Path::Zero`]): when the input is character device 1:5, rpv does
//! not read it but generates the zeros. Into a pipe it vmsplices a constant zero buffer
//! that is never modified (so pages still referenced by the pipe stay valid); into anything
//! else it `write()`s from that buffer. `-S` and `-L` apply exactly as on the other paths.
//!
//! Must not: modify the zero buffer (it lives in `sys`, which only hands out `&[u8]`).

use std::io;

use super::{Engine, Step};
use crate::sys::{self, FileKind};

impl Engine<'_> {
    /// One chunk of generated zeros: one vmsplice or write call.
    pub(super) fn zero_step(&mut self) -> Step {
        let Some(len) = self.next_len(sys::ZERO_CHUNK) else {
            return Step::End;
        };
        let result = if self.injected_failure() {
            Err(io::Error::from_raw_os_error(libc::EINVAL))
        } else if self.out_info.kind == FileKind::Pipe {
            sys::vmsplice_zeros(self.out, len)
        } else {
            sys::zeros().and_then(|z| sys::write(self.out, &z[..len.min(z.len())]))
        };
        match result {
            Ok(0) => {
                let _ = sys::poll_one(self.out, libc::POLLOUT, 100);
                Step::Continue
            }
            Ok(n) => {
                self.read += n as u64;
                self.account(n, 0);
                Step::Continue
            }
            Err(e) => match e.raw_os_error() {
                Some(libc::EINTR) => Step::Continue,
                Some(libc::EAGAIN) => {
                    let _ = sys::poll_one(self.out, libc::POLLOUT, 100);
                    Step::Continue
                }
                Some(libc::EPIPE) => self.output_gone(),
                // Nothing moved: read/write takes over (and reports real errors itself).
                _ => Step::Fallback,
            },
        }
    }
}

/// Whether the zero generator can stand in for reading `info` (byte mode, zero-copy on).
pub(super) fn applies(info: &sys::FileInfo, line_mode: bool) -> bool {
    !line_mode && sys::is_dev_zero(info)
}
