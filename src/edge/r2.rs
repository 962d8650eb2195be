//! [`Blobs`] over the R2 binding `FILES`: bytes by workspace and content hash (see [`crate::domain::blobs`]).

use crate::cx::{BlobPage, Blobs};
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

    fn list(&self, prefix: String, cursor: Option<String>) -> LocalBoxFuture<'_, Result<BlobPage, String>> {
        Box::pin(async move {
            let mut list = self.0.list().prefix(prefix).limit(1000);
            if let Some(c) = cursor {
                list = list.cursor(c);
            }
            let page = list.execute().await.map_err(|e| format!("r2 list: {e}"))?;
            let keys = page.objects().iter().map(|o| o.key()).collect();
            Ok((keys, page.truncated().then(|| page.cursor()).flatten()))
        })
    }

    fn delete(&self, keys: Vec<String>) -> LocalBoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            if keys.is_empty() {
                return Ok(());
            }
            self.0.delete_multiple(keys).await.map_err(|e| format!("r2 delete: {e}"))
        })
    }
}
