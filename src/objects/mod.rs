//! Durable Object classes. Each is a thin async shell over state kept in its own SQLite storage.
#![deny(clippy::await_holding_refcell_ref)]

#[cfg(target_arch = "wasm32")]
pub mod feed;
/// What a session object logs, counts and traces per step (platform-free, so host tests run it).
pub mod observe;
/// One hosted session's container.
#[cfg(target_arch = "wasm32")]
pub mod sandbox;
#[cfg(target_arch = "wasm32")]
pub mod session;
/// The session object's logic, platform-free: the Worker's object and the host tests' stand-in run it.
pub mod session_shell;
