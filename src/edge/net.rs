//! [`Net`] over the Worker's `fetch`. Redirects are never followed here (`redirect: manual`): the 3xx
//! answer goes back to [`crate::egress`], which follows one only within the same origin.

use crate::cx::{Net, Outbound};
use crate::http::HttpResponse;
use futures::future::LocalBoxFuture;
use worker::{Fetch, Headers, Method, Request, RequestInit, RequestRedirect};

pub struct WorkerNet;

impl Net for WorkerNet {
    fn post(&self, out: Outbound) -> LocalBoxFuture<'_, Result<HttpResponse, String>> {
        send(Method::Post, out)
    }
    fn get(&self, out: Outbound) -> LocalBoxFuture<'_, Result<HttpResponse, String>> {
        send(Method::Get, out)
    }
}

fn send(method: Method, out: Outbound) -> LocalBoxFuture<'static, Result<HttpResponse, String>> {
    Box::pin(async move {
        let run = async {
            let headers = Headers::new();
            for (k, v) in &out.headers {
                headers.set(k, v)?;
            }
            let mut init = RequestInit::new();
            let body = (method == Method::Post).then(|| out.body.into());
            init.with_method(method).with_headers(headers).with_body(body).with_redirect(RequestRedirect::Manual);
            let mut resp = Fetch::Request(Request::new_with_init(&out.url, &init)?).send().await?;
            let headers: Vec<(String, String)> =
                resp.headers().entries().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect();
            let body = resp.bytes().await?;
            Ok::<_, worker::Error>(HttpResponse { status: resp.status_code(), headers, body })
        };
        run.await.map_err(|e| e.to_string())
    })
}

/// [`WorkerNet`] observed for a unit of work: traced and counted ([`crate::cx::meter::ObservedNet`]).
pub fn observed(meter: std::rc::Rc<crate::cx::Meter>) -> crate::cx::meter::ObservedNet<WorkerNet> {
    crate::cx::meter::ObservedNet { inner: WorkerNet, meter, now_ms: Box::new(super::now_ms) }
}
