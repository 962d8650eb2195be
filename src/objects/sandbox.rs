//! The `Sandbox` Durable Object: one per hosted session, holding the lifecycle of its container
//! (Cloudflare Containers, wrangler.toml `[[containers]]`). The container runs `sky runner --hosted`, which
//! claims the session's turns and checks from this Worker over the runner protocol, like a person's
//! runner; it reaches the Worker only through this object's interception of [`WORKER_ADDR`] (the Worker's
//! own `SELF` binding), with the internet otherwise closed. It exits after an idle time, and the
//! container sleeps; the next [`SandboxCall::Boot`] starts it again, and the session's files come back
//! from D1 and R2 as on any runner. An alarm stops a container that outlives its time budget.

use js_sys::{Function, Object, Promise, Reflect};
use serde::{Deserialize, Serialize};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::{durable_object, Container, DurableObject, Env, Request, Response, Result, State};

/// Where the container reaches this deployment ([`crate::rules::placement::SANDBOX_ORIGIN`]'s host).
pub const WORKER_ADDR: &str = "10.172.0.1";

/// A call to a sandbox object (the Worker's [`crate::edge::sandboxes`]).
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum SandboxCall {
    /// Starts the container unless it runs, with these environment variables, and (re)sets its time budget.
    Boot { vars: Vec<(String, String)>, max_run_s: i64 },
    /// Stops the container.
    Stop,
    /// Whether it runs.
    State,
}

/// A sandbox object's answer.
#[derive(Debug, Serialize, Deserialize)]
pub struct SandboxAnswer {
    /// The container was asleep (or never started) and this call started it.
    pub woke: bool,
    pub running: bool,
}

#[durable_object]
pub struct Sandbox {
    state: State,
    env: Env,
}

fn js_err(e: JsValue) -> worker::Error {
    worker::Error::JsError(e.as_string().unwrap_or_else(|| format!("{e:?}")))
}

/// Calls `method` of the container's JavaScript object.
fn method(container: &Container, name: &str) -> Result<Function> {
    Reflect::get(container.as_ref(), &name.into()).map_err(js_err)?.dyn_into::<Function>().map_err(js_err)
}

impl Sandbox {
    fn container(&self) -> Result<Container> {
        self.state.container().ok_or_else(|| {
            worker::Error::RustError(
                "this deployment runs no containers (wrangler dev started with containers off)".into(),
            )
        })
    }

    /// Starts the container with `vars` (built as a plain object: the crate's options keep the environment
    /// in a `Map`, which the runtime does not read) and the internet closed, then routes [`WORKER_ADDR`]
    /// to this Worker.
    async fn start(&self, container: &Container, vars: &[(String, String)]) -> Result<()> {
        let env = Object::new();
        for (k, v) in vars {
            Reflect::set(&env, &k.into(), &v.into()).map_err(js_err)?;
        }
        let options = Object::new();
        Reflect::set(&options, &"env".into(), &env).map_err(js_err)?;
        Reflect::set(&options, &"enableInternet".into(), &false.into()).map_err(js_err)?;
        method(container, "start")?.call1(container.as_ref(), &options).map_err(js_err)?;
        let me = self.env.service("SELF")?;
        let routed =
            method(container, "interceptOutboundHttp")?.call2(container.as_ref(), &WORKER_ADDR.into(), me.as_ref());
        JsFuture::from(routed.map_err(js_err)?.dyn_into::<Promise>().map_err(js_err)?).await.map_err(js_err)?;
        Ok(())
    }
}

impl DurableObject for Sandbox {
    fn new(state: State, env: Env) -> Self {
        Self { state, env }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let container = match self.container() {
            Ok(c) => c,
            Err(e) => return Response::error(e.to_string(), 503),
        };
        let storage = self.state.storage();
        match req.json::<SandboxCall>().await? {
            SandboxCall::Boot { vars, max_run_s } => {
                let woke = !container.running();
                if woke {
                    self.start(&container, &vars).await?;
                }
                storage.set_alarm(std::time::Duration::from_secs(max_run_s.max(1) as u64)).await?;
                Response::from_json(&SandboxAnswer { woke, running: true })
            }
            SandboxCall::State => Response::from_json(&SandboxAnswer { woke: false, running: container.running() }),
            SandboxCall::Stop => {
                if container.running() {
                    container.destroy(None).await?;
                }
                storage.delete_alarm().await?;
                Response::from_json(&SandboxAnswer { woke: false, running: false })
            }
        }
    }

    /// The time budget ran out while the container still ran.
    async fn alarm(&self) -> Result<Response> {
        let container = self.container()?;
        if container.running() {
            container.destroy(Some("the sandbox ran past its time budget")).await?;
        }
        Response::ok("")
    }
}
