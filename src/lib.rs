//! agentsky: call your AI agents as tools from any MCP client. A Cloudflare Worker.
//!
//! The map:
//! - [`app`] — the whole server as `handle(env, request) -> response`; routes to the faces below.
//! - [`mcp`] — the MCP transport (Streamable HTTP, stateless, both protocol eras) over a [`mcp::ToolHost`].
//! - [`tools`], [`rest`], [`openapi`], [`ops::help`], [`console`] — the faces of the one operation table,
//!   [`ops::OPS`] (the console is the people's face: pages in a browser).
//! - [`ops`] — the table and one file of handlers per contract area.
//! - [`rules`] — pure domain logic (ids, slugs, limits, rate buckets).
//! - [`store`] — every SQL statement, over the [`store::Sql`] trait (D1 in the Worker, SQLite in tests).
//! - [`cx`] — what a handler may use: bindings, clock, caller, workspace rules.
//! - [`egress`] — the one door to URLs a tenant chose (the outbound rule, redirects).
//! - `edge` (wasm32 only) — the Worker's entry points, D1 and Durable Object adapters.
//!
//! The core never names `worker::`; only `edge` does.

pub mod agent;
pub mod app;
pub mod blobs;
pub mod console;
pub mod cx;
pub mod egress;
pub mod error;
pub mod http;
pub mod keycache;
pub mod mcp;
pub mod oauth;
pub mod objects;
pub mod openapi;
pub mod ops;
pub mod rest;
pub mod rules;
pub mod runner;
pub mod session;
pub mod store;
pub mod taskfs;
pub mod tools;

#[cfg(target_arch = "wasm32")]
mod edge;
