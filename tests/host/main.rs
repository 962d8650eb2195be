//! Host integration tests: the whole server through `app::handle`, on real SQLite with the same
//! migrations D1 runs, a fixed clock and an in-memory limiter. No server, no runtime.

mod support;

mod accounts;
mod agent;
mod context;
mod device;
mod files;
mod goals;
mod harness;
mod help_center;
mod mcp;
mod records;
mod routines;
mod runner_jobs;
mod runners;
mod secrets;
mod sessions;
mod table;
mod tasks;
