//! The domain layer: services every face shares (the operator's operations, the session server, the
//! runner protocol, the console), below all of them. Nothing here names a face (`ops`, `agent`,
//! `runner`, `console`, `rest`, `tools`, `mcp`, `app`); faces reach each other's logic only through here.

pub mod blobs;
pub mod idempotency;
pub mod index;
pub mod rate;
pub mod taskfs;
