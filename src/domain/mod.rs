//! The domain layer: services every face shares (the operator's operations, the session server, the
//! runner protocol, the console), below all of them. Nothing here names a face (`ops`, `agent`, `runner`,
//! `console`, `oauth`, `rest`, `operator_mcp`, `mcp`, `app`); faces reach each other's logic only here.

pub mod billing;
pub mod blobs;
pub mod goal_checks;
pub mod grants;
pub mod help;
pub mod idempotency;
pub mod index;
pub mod jobs;
pub mod lanemerge;
pub mod mint;
pub mod otel;
pub mod push;
pub mod rate;
pub mod requests;
pub mod sandboxes;
pub mod secrets;
pub mod sessions;
pub mod slack;
pub mod taskfs;
pub mod webhooks;
