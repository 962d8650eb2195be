//! The runtime's WebCrypto (`crypto.subtle`) from the Worker's wasm: the one way [`super::jwt`] signs RS256
//! and [`super::webpush`] derives, signs and encrypts there, instead of bundling crates for it.

use js_sys::{Array, Function, Promise, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// What a JavaScript failure says.
pub fn said(e: JsValue) -> String {
    e.as_string().or_else(|| js_sys::Error::from(e).message().as_string()).unwrap_or_default()
}

/// `crypto.subtle`.
pub fn subtle() -> Result<JsValue, String> {
    let crypto = Reflect::get(&js_sys::global(), &"crypto".into()).map_err(said)?;
    Reflect::get(&crypto, &"subtle".into()).map_err(said)
}

/// `target[method](...args)`, awaited: also how the sandbox's object calls its container's methods.
pub async fn call(target: &JsValue, method: &str, args: Array) -> Result<JsValue, String> {
    let f: Function = Reflect::get(target, &method.into()).map_err(said)?.dyn_into().map_err(said)?;
    let promise: Promise = f.apply(target, &args).map_err(said)?.dyn_into().map_err(said)?;
    JsFuture::from(promise).await.map_err(said)
}
