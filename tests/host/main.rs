//! Host integration tests: the whole server through `app::handle`, on real SQLite with the same
//! migrations D1 runs, a fixed clock and an in-memory limiter. No server, no runtime.

mod support;

mod accounts;
mod agent;
mod approvals;
mod billing;
mod cancel_turn;
mod console;
mod context;
mod deploy_proof;
mod device;
mod files;
mod goals;
mod harness;
mod help_center;
/// The help articles' renderer, which build.rs runs at build time.
#[path = "../../help/render.rs"]
mod help_render;
mod help_topics;
mod lanes;
mod layering;
mod lifecycle;
mod limits;
mod mcp;
mod mcp_features;
mod mcp_setup;
mod mcp_tasks;
mod members;
mod money;
mod narrowed;
mod oauth;
mod observability;
mod operator;
mod params;
mod placement;
mod push;
mod records;
mod remotes;
mod requests;
mod routines;
mod runner_jobs;
mod runners;
mod schemas;
mod secrets;
mod session_shell;
mod sessions;
mod skills;
mod slack;
mod table;
mod tasks;
mod webhooks;
