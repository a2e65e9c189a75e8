//! Black-box tests of gridd over HTTP: each test starts the real server on port 0 with its own
//! data directory (see `helpers::spawn_app`). One module per area.

mod helpers;

mod crash;
mod smoke;
