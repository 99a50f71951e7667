//! The `rpv` binary: all the work is in the library (`rpv::app`).

fn main() {
    let args = std::env::args_os().collect();
    std::process::exit(rpv::app::main_with_args(args));
}
