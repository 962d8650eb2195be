//! The `Session` Durable Object: one per agent session. It will hold the session's ordered event log,
//! its turn state and the waiters of `read_session` (issue 3). Until then it refuses every call with a
//! clear error, so nothing pretends to work.

use worker::{durable_object, DurableObject, Env, Response, Result, State};

#[durable_object]
pub struct Session {
    #[allow(dead_code)]
    state: State,
}

impl DurableObject for Session {
    fn new(state: State, _env: Env) -> Self {
        Self { state }
    }

    async fn fetch(&self, _req: worker::Request) -> Result<Response> {
        Response::error("sessions are not built yet", 501)
    }
}
