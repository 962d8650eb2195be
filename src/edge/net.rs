//! [`Net`] over the Worker's `fetch`. Redirects are never followed here (`redirect: manual`): the 3xx
//! answer goes back to [`crate::egress`], which follows one only within the same origin. A GET's body is
//! read chunk by chunk and the stream cancelled once it passes its limit, so a huge answer is never
//! downloaded whole.

use crate::cx::{Net, Outbound};
use crate::http::HttpResponse;
use futures::future::LocalBoxFuture;
use futures::StreamExt;
use worker::{Fetch, Headers, Method, Request, RequestInit, RequestRedirect, Response, ResponseBody};

pub struct WorkerNet;

impl Net for WorkerNet {
    fn post(&self, out: Outbound) -> LocalBoxFuture<'_, Result<HttpResponse, String>> {
        send(Method::Post, out, None)
    }
    fn get(&self, out: Outbound, max_bytes: usize) -> LocalBoxFuture<'_, Result<HttpResponse, String>> {
        send(Method::Get, out, Some(max_bytes))
    }
}

fn send(
    method: Method,
    out: Outbound,
    max_bytes: Option<usize>,
) -> LocalBoxFuture<'static, Result<HttpResponse, String>> {
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
            let body = match max_bytes {
                Some(max) => read_at_most(&mut resp, max).await?,
                None => resp.bytes().await?,
            };
            Ok::<_, worker::Error>(HttpResponse { status: resp.status_code(), headers, body })
        };
        run.await.map_err(|e| e.to_string())
    })
}

/// The body up to `max + 1` bytes: past that the stream is cancelled, which tells the runtime to stop
/// downloading (dropping the reader alone would only release it).
async fn read_at_most(resp: &mut Response, max: usize) -> worker::Result<Vec<u8>> {
    let ResponseBody::Stream(raw) = resp.body() else { return resp.bytes().await };
    let raw = raw.clone();
    let mut chunks = resp.stream()?;
    let mut body = Vec::new();
    while let Some(chunk) = chunks.next().await {
        body.extend_from_slice(&chunk?);
        if body.len() > max {
            body.truncate(max + 1);
            drop(chunks);
            let _ = wasm_bindgen_futures::JsFuture::from(raw.cancel()).await;
            break;
        }
    }
    Ok(body)
}

/// [`WorkerNet`] observed for a unit of work: traced and counted ([`crate::cx::meter::ObservedNet`]).
pub fn observed(meter: std::rc::Rc<crate::cx::Meter>) -> crate::cx::meter::ObservedNet<WorkerNet> {
    crate::cx::meter::ObservedNet { inner: WorkerNet, meter, now_ms: Box::new(super::now_ms) }
}
