//! The `rpv` binary: all the work is in the library (`rpv::app`).

fn main() {
    let args = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    std::process::exit(rpv::app::main_with_args(args));
}
