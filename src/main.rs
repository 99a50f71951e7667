//! The `rpv` binary: all the work is in the library (`rpv::app`).

fn main() {
    // First, while this is the only thread: lets `-x processtitle` use the environment area.
    rpv::term::title::prepare_process_title();
    let args = std::env::args_os().collect();
    std::process::exit(rpv::app::main_with_args(args));
}
