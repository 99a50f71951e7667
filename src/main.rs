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
    // SAFETY: fcntl(F_GETFD) only asks whether the descriptor exists (EBADF if not); it
    // takes no pointers and changes nothing.
    let closed = |fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1;
    rpv::stdio::record_closed(closed(0), closed(1), closed(2));
}
