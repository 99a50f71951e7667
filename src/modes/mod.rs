//! The alternative modes of spec 4: each is a producer of progress that is not the local
//! transfer engine. `app::run` dispatches on [`crate::cli::Action`].

pub mod monitor;
pub mod remote;
pub mod watchfd;
