//! [`Blobs`] over the R2 binding `FILES`: file bytes by content hash.

use crate::cx::Blobs;
use futures::future::LocalBoxFuture;
use worker::Bucket;

pub struct R2(pub Bucket);

impl Blobs for R2 {
    fn put(&self, key: String, bytes: Vec<u8>) -> LocalBoxFuture<'_, Result<(), String>> {
        Box::pin(async move { self.0.put(&key, bytes).execute().await.map(drop).map_err(|e| format!("r2 put: {e}")) })
    }

    fn get(&self, key: String) -> LocalBoxFuture<'_, Result<Option<Vec<u8>>, String>> {
        Box::pin(async move {
            let Some(object) = self.0.get(&key).execute().await.map_err(|e| format!("r2 get: {e}"))? else {
                return Ok(None);
            };
            match object.body() {
                Some(body) => body.bytes().await.map(Some).map_err(|e| format!("r2 body: {e}")),
                None => Ok(Some(Vec::new())),
            }
        })
    }
}
