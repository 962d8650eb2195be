//! The `Sandbox` Durable Object: one per hosted session, holding the lifecycle of its container
//! (Cloudflare Containers, wrangler.toml `[[containers]]`). The container runs `sky runner --hosted`, which
//! claims the session's turns and checks from this Worker over the runner protocol, like a person's
//! runner; it reaches the Worker through this object's interception of
//! [`SANDBOX_ORIGIN`](placement::SANDBOX_ORIGIN) (the Worker's own `SELF` binding). Everything else it
//! sends goes to its egress guard, an object of the same class named `egress:<session>` (so no request
//! from the container can reach this object's calls), which lets through only the hosts on its boot's
//! egress list. It exits after an idle time, and the container
//! sleeps; the next [`SandboxCall::Boot`] starts it again, and the session's files come back from D1 and
//! R2 as on any runner. An alarm stops a container that outlives its time budget.

use crate::edge::d1::D1;
use crate::edge::sandboxes::{SandboxAnswer, SandboxCall};
use crate::rules::placement;
use js_sys::{Function, Object, Promise, Reflect};
use std::cell::RefCell;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::{durable_object, Container, DurableObject, Env, Fetch, Request, Response, Result, State};

/// The prefix of an egress guard's name.
const GUARD: &str = "egress:";

/// How long a guard keeps the egress list it read (a new boot may bring a new one).
const LIST_TTL_MS: f64 = 10_000.0;

#[durable_object]
pub struct Sandbox {
    state: State,
    env: Env,
    /// A guard's egress list and when it was read.
    allowed: RefCell<Option<(f64, Vec<String>)>>,
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
    /// in a `Map`, which the runtime does not read) and the internet closed, then routes
    /// [`SANDBOX_ORIGIN`](placement::SANDBOX_ORIGIN) to this Worker and everything else to the guard.
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
        intercept(container, "interceptOutboundHttp", &[placement::sandbox_host().into(), me.as_ref().clone()]).await?;
        let name = self.state.id().name().unwrap_or_default();
        let guard = self.env.durable_object("SANDBOXES")?.id_from_name(&format!("{GUARD}{name}"))?.get_stub()?;
        let guard: JsValue = guard.into_rpc();
        intercept(container, "interceptAllOutboundHttp", std::slice::from_ref(&guard)).await?;
        // HTTPS too where the runtime intercepts it (the container trusts its CA: sandbox/entrypoint.sh).
        if Reflect::has(container.as_ref(), &"interceptOutboundHttps".into()).unwrap_or(false) {
            intercept(container, "interceptOutboundHttps", &["*".into(), guard]).await?;
        }
        Ok(())
    }

    /// The guard's answer to a request the container sent out: to the Worker for
    /// [`SANDBOX_ORIGIN`](placement::SANDBOX_ORIGIN), out for a host on the egress list of the session's
    /// newest boot, refused otherwise.
    async fn egress(&self, session_id: &str, req: Request) -> Result<Response> {
        let url = req.url()?;
        let host = url.host_str().unwrap_or_default().to_owned();
        if host == placement::sandbox_host() {
            return self.env.service("SELF")?.fetch_request(req).await;
        }
        let now = js_sys::Date::now();
        let fresh = self.allowed.borrow().as_ref().filter(|(at, _)| now - at < LIST_TTL_MS).map(|(_, l)| l.clone());
        let allowed = match fresh {
            Some(list) => list,
            None => {
                let db = D1(self.env.d1("DB")?);
                let list = crate::store::sandboxes::egress(&db, session_id)
                    .await
                    .map_err(|e| worker::Error::RustError(e.to_string()))?;
                *self.allowed.borrow_mut() = Some((now, list.clone()));
                list
            }
        };
        // A listed host on its scheme's own port only.
        if url.port().is_some() || !placement::allows(&allowed, &host) {
            let why = format!(
                "agentsky: this sandbox may not reach `{host}`: it is not on the agent's egress list (its `egress`, \
                 and the defaults for its harness and targets)\n"
            );
            return Response::error(why, 403);
        }
        match Fetch::Request(req).send().await {
            Ok(resp) => Ok(resp),
            Err(e) => Response::error(format!("agentsky: `{host}` did not answer this sandbox: {e}\n"), 502),
        }
    }
}

/// Calls an interception method of the container and waits for it.
async fn intercept(container: &Container, name: &str, args: &[JsValue]) -> Result<()> {
    let args: js_sys::Array = args.iter().collect();
    crate::rules::webcrypto::call(container.as_ref(), name, args).await.map(drop).map_err(worker::Error::RustError)
}

impl DurableObject for Sandbox {
    fn new(state: State, env: Env) -> Self {
        Self { state, env, allowed: RefCell::new(None) }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        if let Some(session_id) = self.state.id().name().and_then(|n| n.strip_prefix(GUARD).map(str::to_owned)) {
            return self.egress(&session_id, req).await;
        }
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
