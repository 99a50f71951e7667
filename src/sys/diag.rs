//! The byte counts of TCP sockets, from the kernel's `sock_diag` netlink interface.
//!
//! Programs that move data with `send`/`recv` (curl, Python's `sendall`) do not show in
//! `/proc/PID/io`, which counts only the read and write families; the kernel's TCP
//! statistics (`tcp_info`: bytes acknowledged, bytes received) count every byte. One dump
//! per address family lists every TCP socket of the network namespace with its inode,
//! which `/proc/PID/fd` links name (`socket:[INODE]`).
//!
//! The same interface names the other end of a Unix stream socket (its inode), which
//! `/proc/net/unix` does not tell.
//!
//! # References
//! - `sock_diag(7)`, `netlink(7)`; `struct tcp_info` in the kernel's
//!   `include/uapi/linux/tcp.h`; `struct unix_diag_req` and `UNIX_DIAG_PEER` in
//!   `include/uapi/linux/unix_diag.h`.

use std::collections::HashMap;
use std::io;

use rustix::net::{self, netlink, AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};

/// `SOCK_DIAG_BY_FAMILY`.
const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// `NLM_F_REQUEST | NLM_F_DUMP`.
const DUMP_REQUEST: u16 = 0x1 | 0x300;
/// `NLMSG_DONE`, `NLMSG_ERROR`.
const NLMSG_DONE: u16 = 3;
const NLMSG_ERROR: u16 = 2;
/// The `inet_diag_req_v2` extension bit asking for `tcp_info` (`1 << (INET_DIAG_INFO - 1)`).
const WANT_INFO: u8 = 1 << 1;
/// `INET_DIAG_INFO`, the attribute that holds `tcp_info`.
const INET_DIAG_INFO: u16 = 2;
/// Size of `struct inet_diag_msg` (its inode is the last field).
const DIAG_MSG: usize = 72;
/// Offsets of `tcpi_bytes_acked` and `tcpi_bytes_received` in `struct tcp_info`.
const BYTES_ACKED: usize = 120;
const BYTES_RECEIVED: usize = 128;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The dump request for every TCP socket of `family`, with `tcp_info`.
fn request(family: u8, seq: u32) -> [u8; 72] {
    let mut req = [0u8; 72];
    req[0..4].copy_from_slice(&72u32.to_ne_bytes());
    req[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    req[6..8].copy_from_slice(&DUMP_REQUEST.to_ne_bytes());
    req[8..12].copy_from_slice(&seq.to_ne_bytes());
    // inet_diag_req_v2: family, protocol, extensions, pad, states, then the socket id
    // (all zeros: every socket).
    req[16] = family;
    req[17] = libc::IPPROTO_TCP as u8;
    req[18] = WANT_INFO;
    req[20..24].copy_from_slice(&u32::MAX.to_ne_bytes());
    req
}

/// Adds the sockets of one reply buffer to `out`; true once the dump is done.
pub(super) fn parse_reply(buf: &[u8], out: &mut HashMap<u64, u64>) -> io::Result<bool> {
    let mut at = 0;
    while at + 16 <= buf.len() {
        let Some(len) = u32_at(buf, at).map(|l| l as usize) else {
            break;
        };
        let kind = u16_at(buf, at + 4).unwrap_or(0);
        if len < 16 || at + len > buf.len() {
            break;
        }
        match kind {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let errno = u32_at(buf, at + 16).map_or(0, |e| (e as i32).wrapping_neg());
                return Err(io::Error::from_raw_os_error(errno));
            }
            _ => parse_socket(&buf[at + 16..at + len], out),
        }
        at += (len + 3) & !3;
    }
    Ok(false)
}

/// One `inet_diag_msg` and its attributes: the inode and its bytes acknowledged plus
/// received.
fn parse_socket(msg: &[u8], out: &mut HashMap<u64, u64>) {
    let Some(inode) = u32_at(msg, DIAG_MSG - 4) else {
        return;
    };
    let Some(info) = attribute(msg, DIAG_MSG, INET_DIAG_INFO) else {
        return;
    };
    // The SYN counts as one byte acknowledged.
    let acked = u64_at(info, BYTES_ACKED).unwrap_or(0).saturating_sub(1);
    let received = u64_at(info, BYTES_RECEIVED).unwrap_or(0);
    if inode != 0 {
        out.insert(u64::from(inode), acked.saturating_add(received));
    }
}

/// The payload of the first netlink attribute of type `want` in `msg`, the attributes
/// starting at `from` (each: a 16-bit length, a 16-bit type, the payload, padded to 4).
fn attribute(msg: &[u8], from: usize, want: u16) -> Option<&[u8]> {
    let mut at = from;
    while at + 4 <= msg.len() {
        let len = u16_at(msg, at)? as usize;
        let kind = u16_at(msg, at + 2)?;
        if len < 4 || at + len > msg.len() {
            return None;
        }
        if kind == want {
            return Some(&msg[at + 4..at + len]);
        }
        at += (len + 3) & !3;
    }
    None
}

/// A netlink socket for `sock_diag` queries, and the kernel's address.
fn diag_socket() -> io::Result<(std::os::fd::OwnedFd, netlink::SocketAddrNetlink)> {
    let fd = net::socket_with(
        AddressFamily::NETLINK,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        Some(netlink::SOCK_DIAG),
    )?;
    Ok((fd, netlink::SocketAddrNetlink::new(0, 0)))
}

/// Every TCP socket of rpv's network namespace (IPv4 and IPv6): its inode and the bytes
/// it has sent (acknowledged) and received, added up.
pub(crate) fn tcp_bytes(out: &mut HashMap<u64, u64>) -> io::Result<()> {
    let (fd, kernel) = diag_socket()?;
    let mut buf = vec![0u8; 32 * 1024];
    for (seq, family) in [(1, libc::AF_INET), (2, libc::AF_INET6)] {
        net::sendto(
            &fd,
            &request(family as u8, seq),
            SendFlags::empty(),
            &kernel,
        )?;
        loop {
            let (n, _) = net::recv(&fd, &mut buf[..], RecvFlags::empty())?;
            if n == 0 || parse_reply(&buf[..n], out)? {
                break;
            }
        }
    }
    Ok(())
}

/// `NLM_F_REQUEST` alone: a lookup of one socket.
const LOOKUP_REQUEST: u16 = 0x1;
/// `UDIAG_SHOW_PEER`, and the attribute that answers it (`UNIX_DIAG_PEER`).
const UDIAG_SHOW_PEER: u32 = 0x4;
const UNIX_DIAG_PEER: u16 = 2;
/// Size of `struct unix_diag_msg`.
const UNIX_DIAG_MSG: usize = 16;

/// The lookup request for the Unix socket `inode`, asking for its peer.
fn unix_request(inode: u32) -> [u8; 40] {
    let mut req = [0u8; 40];
    req[0..4].copy_from_slice(&40u32.to_ne_bytes());
    req[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    req[6..8].copy_from_slice(&LOOKUP_REQUEST.to_ne_bytes());
    req[8..12].copy_from_slice(&1u32.to_ne_bytes());
    // unix_diag_req: family, protocol, pad, states, inode, show, cookie (none: all ones).
    req[16] = libc::AF_UNIX as u8;
    req[20..24].copy_from_slice(&u32::MAX.to_ne_bytes());
    req[24..28].copy_from_slice(&inode.to_ne_bytes());
    req[28..32].copy_from_slice(&UDIAG_SHOW_PEER.to_ne_bytes());
    req[32..40].copy_from_slice(&[0xff; 8]);
    req
}

/// The peer's inode in a reply to [`unix_request`].
fn parse_unix_reply(buf: &[u8]) -> io::Result<Option<u64>> {
    let len = u32_at(buf, 0).map_or(0, |l| l as usize).min(buf.len());
    match u16_at(buf, 4) {
        Some(NLMSG_ERROR) => {
            let errno = u32_at(buf, 16).map_or(0, |e| (e as i32).wrapping_neg());
            return Err(io::Error::from_raw_os_error(errno));
        }
        Some(SOCK_DIAG_BY_FAMILY) => {}
        _ => return Ok(None),
    }
    Ok(attribute(&buf[..len], 16 + UNIX_DIAG_MSG, UNIX_DIAG_PEER)
        .and_then(|peer| u32_at(peer, 0))
        .filter(|&p| p != 0)
        .map(u64::from))
}

/// The inode of the socket at the other end of the Unix socket `inode` (of rpv's network
/// namespace); `None` if it has no peer (not connected, or its peer is closed).
pub(crate) fn unix_peer(inode: u64) -> io::Result<Option<u64>> {
    let Ok(inode) = u32::try_from(inode) else {
        return Ok(None);
    };
    let (fd, kernel) = diag_socket()?;
    net::sendto(&fd, &unix_request(inode), SendFlags::empty(), &kernel)?;
    let mut buf = vec![0u8; 4096];
    let (n, _) = net::recv(&fd, &mut buf[..], RecvFlags::empty())?;
    parse_unix_reply(&buf[..n.min(buf.len())])
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn a_local_connection_is_counted_on_both_ends() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        client.write_all(&[7u8; 100_000]).unwrap();
        let mut got = vec![0u8; 100_000];
        server.read_exact(&mut got).unwrap();
        let inode = |s: &std::net::TcpStream| {
            use std::os::fd::AsRawFd;
            let link = crate::procfs::fd_link(std::process::id(), s.as_raw_fd()).unwrap();
            let link = link.to_string_lossy().into_owned();
            link.trim_start_matches("socket:[")
                .trim_end_matches(']')
                .parse::<u64>()
                .unwrap()
        };
        let mut bytes = HashMap::new();
        // The acknowledgement may come a moment after the write.
        for _ in 0..100 {
            bytes.clear();
            tcp_bytes(&mut bytes).unwrap();
            if bytes.get(&inode(&client)) == Some(&100_000) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(
            bytes.get(&inode(&client)),
            Some(&100_000),
            "sent, acknowledged"
        );
        assert_eq!(bytes.get(&inode(&server)), Some(&100_000), "received");
    }

    #[test]
    fn a_unix_socket_pairs_peer_is_the_other_end() {
        use std::os::fd::AsRawFd;
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let inode = |fd: i32| {
            let link = crate::procfs::fd_link(std::process::id(), fd).unwrap();
            let link = link.to_string_lossy().into_owned();
            link.trim_start_matches("socket:[")
                .trim_end_matches(']')
                .parse::<u64>()
                .unwrap()
        };
        let (ia, ib) = (inode(a.as_raw_fd()), inode(b.as_raw_fd()));
        assert_eq!(unix_peer(ia).unwrap(), Some(ib));
        assert_eq!(unix_peer(ib).unwrap(), Some(ia));
        drop(b);
        // (Once every copy of `b` is closed: see `sys::wait_until`.)
        crate::sys::wait_until("its peer is closed", || unix_peer(ia).unwrap().is_none());
    }
}
