//! A turn, run: the step loop the session's Durable Object drives (`driver`), the `openai` harness with
//! its model calls, the agent's built-in file tools and remote MCP servers, and the wallet's holds and
//! settlement. Above the session's core (`crate::session`), which stays pure over its own storage.

pub mod agent_tools;
pub mod driver;
pub mod mcp_client;
pub mod openai;
pub mod ports;
pub mod skills;
pub mod wallet;
