//! The JSON Schemas (2020-12) a type publishes: one for what a caller may send, one for what the server
//! sends. Every face derives its tool and route schemas here, so the two contracts are serde's own.
//!
//! The Worker does not derive them at run time: it reads `src/schemas.json`, every published schema under
//! its row's key, which the host test `table::the_published_schemas_are_derived_from_the_types` derives
//! from the types and compares (`UPDATE_GOLDEN=1` rewrites it). Deriving them in the Worker cost about
//! 94 KB of its gzipped wasm (schemars' generator and one impl per type), the file about 38 KB.

use serde_json::Value;

/// The schema of what a caller may send: serde's deserialize contract (JSON Schema 2020-12).
#[cfg(not(target_arch = "wasm32"))]
pub fn input_schema<T: schemars::JsonSchema>() -> schemars::Schema {
    schemars::generate::SchemaSettings::draft2020_12().for_deserialize().into_generator().into_root_schema_for::<T>()
}

/// The schema of what the server sends: serde's serialize contract, so a field serde may skip is not
/// `required` and a field it never writes is not listed. Clients validate every result against it.
#[cfg(not(target_arch = "wasm32"))]
pub fn output_schema<T: schemars::JsonSchema>() -> schemars::Schema {
    schemars::generate::SchemaSettings::draft2020_12().for_serialize().into_generator().into_root_schema_for::<T>()
}

/// The schema a table row publishes for a type: derived from it on a host build, read from
/// `src/schemas.json` by the row's key in the Worker. Rows name it the same way on both.
#[derive(Clone, Copy)]
pub struct Published {
    #[cfg(not(target_arch = "wasm32"))]
    derive: fn() -> schemars::Schema,
}

impl Published {
    /// What a caller may send as `T`.
    #[cfg(not(target_arch = "wasm32"))]
    pub const fn input<T: schemars::JsonSchema>() -> Published {
        Published { derive: input_schema::<T> }
    }

    /// What the server sends as `T`.
    #[cfg(not(target_arch = "wasm32"))]
    pub const fn output<T: schemars::JsonSchema>() -> Published {
        Published { derive: output_schema::<T> }
    }

    #[cfg(target_arch = "wasm32")]
    pub const fn input<T>() -> Published {
        Published {}
    }

    #[cfg(target_arch = "wasm32")]
    pub const fn output<T>() -> Published {
        Published {}
    }

    /// The schema as a model reads it among its function specs: without the `$schema` line.
    pub fn for_model(self, key: &str) -> Value {
        let mut schema = self.get(key);
        if let Some(map) = schema.as_object_mut() {
            map.remove("$schema");
        }
        schema
    }

    /// The schema, published under `key` (`op:<name>:params`, `session_tool:<name>`, …).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn get(self, key: &str) -> Value {
        let _ = key;
        (self.derive)().to_value()
    }

    /// The schema, published under `key`. A key the file lacks reads as `{}` (anything); the host test
    /// keeps the file complete, so that never ships.
    #[cfg(target_arch = "wasm32")]
    pub fn get(self, key: &str) -> Value {
        static ALL: std::sync::OnceLock<serde_json::Map<String, Value>> = std::sync::OnceLock::new();
        let all = ALL.get_or_init(|| serde_json::from_str(include_str!("../schemas.json")).unwrap_or_default());
        all.get(key).cloned().unwrap_or_else(|| Value::Object(Default::default()))
    }
}
