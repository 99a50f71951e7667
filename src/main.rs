//! The `rpv` binary: all the work is in the library (`rpv::app`).

fn main() {
    // First, while this is the only thread: lets `-x processtitle` use the environment area.
    rpv::prepare_process_title();
    let args = std::env::args_os().collect();
    std::process::exit(rpv::app::main_with_args(args));
}

/// Runs before Rust's runtime starts (the dynamic loader calls `.init_array` functions
/// before `main`), so it sees standard input and output as the caller left them: the
/// runtime then reopens closed ones on /dev/null. See `rpv::stdio`.
#[used]
#[link_section = ".init_array"]
static RECORD_CLOSED_STDIO: extern "C" fn() = record_closed_stdio;

extern "C" fn record_closed_stdio() {
    // Only EBADF means closed: any other failure of the call says nothing about the
    // descriptor, which is then taken as open (as it almost surely is).
    let closed = |fd| {
        // SAFETY: fcntl(F_GETFD) only asks whether the descriptor exists (EBADF if not); it
        // takes no pointers and changes nothing.
        let failed = unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1;
        failed && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF)
    };
    rpv::stdio::record_closed(closed(0), closed(1), closed(2));
}
