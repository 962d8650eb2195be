//! The `Sandbox` Durable Object: one per hosted session, holding the lifecycle of its container
//! (Cloudflare Containers, wrangler.toml `[[containers]]`). The container runs `sky runner --hosted`, which
//! claims the session's turns and checks from this Worker over the runner protocol, like a person's
//! runner; it reaches the Worker only through this object's interception of [`SANDBOX_ORIGIN`] (the Worker's
//! own `SELF` binding), with the internet otherwise closed. It exits after an idle time, and the
//! container sleeps; the next [`SandboxCall::Boot`] starts it again, and the session's files come back
//! from D1 and R2 as on any runner. An alarm stops a container that outlives its time budget.

use crate::edge::sandboxes::{SandboxAnswer, SandboxCall};
use crate::rules::placement::SANDBOX_ORIGIN;
use js_sys::{Function, Object, Promise, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::{durable_object, Container, DurableObject, Env, Request, Response, Result, State};

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
    /// in a `Map`, which the runtime does not read) and the internet closed, then routes [`SANDBOX_ORIGIN`]
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
        // Watched, so the runtime takes in the exit of an idle runner (`running` turns false); how it
        // ended is not needed.
        let exit = method(container, "monitor")?.call0(container.as_ref()).map_err(js_err)?;
        if let Ok(exit) = exit.dyn_into::<Promise>() {
            wasm_bindgen_futures::spawn_local(async move {
                let _ = JsFuture::from(exit).await;
            });
        }
        let me = self.env.service("SELF")?;
        let addr = SANDBOX_ORIGIN.trim_start_matches("http://");
        let routed = method(container, "interceptOutboundHttp")?.call2(container.as_ref(), &addr.into(), me.as_ref());
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
            // The Worker boots only what it saw asleep. A container the runtime still counts as running
            // then is one whose exit it has not taken in yet (or one that lost its token): it is ended, and
            // the new one starts with the new token.
            SandboxCall::Boot { vars, max_run_s } => {
                if container.running() {
                    let _ = container.destroy(Some("replaced by a new boot")).await;
                }
                self.start(&container, &vars).await?;
                storage.set_alarm(std::time::Duration::from_secs(max_run_s.max(1) as u64)).await?;
                Response::from_json(&SandboxAnswer { woke: true, running: true })
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
